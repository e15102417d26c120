"""Metric groups in Prometheus' text exposition format (0.0.4), named as Flink's Prometheus reporter names them.

A metric ``numRecordsIn`` of a group with logical scope ``taskmanager.job.task.operator`` is
``flink_taskmanager_job_task_operator_numRecordsIn``; the group's scope variables are its labels
(``job_name``, ``task_name``, ``subtask_index``, ...). Characters Prometheus does not allow
(anything but ``[a-zA-Z0-9:_]``) become ``_`` in names, and in label values too unless the
reporter's ``filterLabelValueCharacters`` is false. Counters, meters (their rate) and gauges are
Prometheus gauges; a gauge whose value is no number (a path, ``n/a``) reports 0; booleans 1 and 0;
a histogram is a summary: ``_count`` and the quantiles 0 (its minimum), 0.5, 0.75, 0.95, 0.98, 0.99,
0.999 and 1 (its maximum), without a ``_sum`` (Flink's ``HistogramSummaryProxy``).

The text is written here, not by prometheus_client's ``generate_latest``: that one sorts and escapes
every label of every sample on every scrape (1.6 ms of CPU for the two tasks of W2, taken from the
task's GIL: 1.6% of the job at a scrape every 100 ms). The format is small and specified; here each
group's label string is worked out once and every sample is one line from it. The tests read the
output with prometheus_client's parser and with a real Prometheus.
"""

from __future__ import annotations

import math
import re
from typing import Any, Iterable, Mapping, Optional

from streamkernel.runtime.metrics.groups import HistogramStatistics, MetricGroupSnapshot, MetricType
from streamkernel.runtime.metrics.reporter_setup import ReporterSetup

__all__ = ["PrometheusText", "replace_invalid_chars", "format_value", "QUANTILES", "SCOPE_PREFIX", "CONTENT_TYPE"]

#: Every metric name starts with this.
SCOPE_PREFIX = "flink_"
#: The quantiles of a histogram's summary, between its minimum (0.0) and maximum (1.0).
QUANTILES = (0.5, 0.75, 0.95, 0.98, 0.99, 0.999)
#: The content type of the text exposition format.
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_INVALID = re.compile(r"[^a-zA-Z0-9:_]")


def replace_invalid_chars(text: str) -> str:
    """``text`` with every character Prometheus does not allow in a name replaced by ``_``.

        >>> replace_invalid_chars("Source: Collection -> Map")
        'Source:_Collection____Map'
    """
    return _INVALID.sub("_", text)


def _escape_label_value(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def format_value(value: Any) -> str:
    """A sample's value as the text format writes it (``NaN``, ``+Inf``, ``-Inf``; a gauge that is no
    number: ``0``, as Flink's reporter reports it).

        >>> format_value(True), format_value(7), format_value(2.5), format_value(float("-inf")), format_value("n/a")
        ('1', '7', '2.5', '-Inf', '0')
    """
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "+Inf" if value > 0 else "-Inf"
        return repr(value)
    return "0"


class _Family:
    """One metric name's HELP and TYPE lines and its sample lines."""

    __slots__ = ("header", "lines")

    def __init__(self, name: str, help_text: str, kind: str) -> None:
        self.header = f"# HELP {name} {help_text}\n# TYPE {name} {kind}\n"
        self.lines: list[str] = []


class PrometheusText:
    """Writes metric groups as Prometheus text for one reporter (``setup``: its filter and variables),
    remembering what it worked out (a metric's name and whether the filter keeps it, a group's label
    string) across scrapes: a scrape then costs little more than a line per value."""

    #: How many names or label sets it remembers before it starts afresh (jobs come and go).
    CACHE_LIMIT = 20_000

    def __init__(self, setup: ReporterSetup) -> None:
        self.setup = setup
        self._names: dict[tuple[tuple[str, ...], str, MetricType], Optional[tuple[str, str]]] = {}
        self._labels: dict[tuple[tuple[str, str], ...], str] = {}

    def _name(self, scope: tuple[str, ...], name: str, metric_type: MetricType) -> Optional[tuple[str, str]]:
        """(full name, help) of a metric the filter keeps, else None."""
        key = (scope, name, metric_type)
        try:
            return self._names[key]
        except KeyError:
            pass
        if len(self._names) > self.CACHE_LIMIT:
            self._names.clear()
        found: Optional[tuple[str, str]] = None
        if self.setup.metric_filter.accepts(".".join(scope), name, metric_type):
            scope_name = "_".join(replace_invalid_chars(c) for c in scope)
            help_text = f"{name} (scope: {scope_name})".replace("\\", "\\\\").replace("\n", "\\n")
            found = (f"{SCOPE_PREFIX}{scope_name}_{replace_invalid_chars(name)}", help_text)
        self._names[key] = found
        return found

    def labels(self, variables: Mapping[str, str]) -> dict[str, str]:
        """The labels of a group with these scope variables: less the excluded ones, plus the additional ones."""
        value_of = replace_invalid_chars if self.setup.filter_label_values else str
        labels = {replace_invalid_chars(k): value_of(str(v)) for k, v in variables.items()
                  if k not in self.setup.excluded_variables}
        labels.update({replace_invalid_chars(k): value_of(v) for k, v in self.setup.additional_variables.items()})
        return labels

    def _label_text(self, variables: Mapping[str, str]) -> str:
        key = tuple(variables.items())
        text = self._labels.get(key)
        if text is None:
            if len(self._labels) > self.CACHE_LIMIT:
                self._labels.clear()
            text = ",".join(f'{k}="{_escape_label_value(v)}"' for k, v in self.labels(variables).items())
            self._labels[key] = text
        return text

    def render(self, groups: Iterable[MetricGroupSnapshot]) -> str:
        """The text of ``groups``: one family (HELP, TYPE, samples) per metric name, a sample per group
        that has the metric and whose metric the filter keeps."""
        families: dict[str, _Family] = {}
        for group in groups:
            labels = self._label_text(group.variables)
            braced = "{" + labels + "}" if labels else ""
            types = group.types
            for name, value in group.metrics.items():
                metric_type = types.get(name, MetricType.GAUGE)
                named = self._name(group.scope, name, metric_type)
                if named is None:
                    continue
                full_name, help_text = named
                histogram = metric_type is MetricType.HISTOGRAM and isinstance(value, HistogramStatistics)
                family = families.get(full_name)
                if family is None:
                    family = families[full_name] = _Family(full_name, help_text, "summary" if histogram else "gauge")
                if histogram:
                    _summary_lines(family.lines, full_name, labels, value)
                else:
                    family.lines.append(f"{full_name}{braced} {format_value(value)}\n")
        return "".join(family.header + "".join(family.lines) for family in families.values())


def _summary_lines(lines: list[str], name: str, labels: str, value: HistogramStatistics) -> None:
    sep = "," if labels else ""
    lines.append(f"{name}_count{{{labels}}} {format_value(float(value.count))}\n" if labels
                 else f"{name}_count {format_value(float(value.count))}\n")
    for quantile, figure in (("0.0", value.min), *((str(q), value.quantile(q)) for q in QUANTILES), ("1.0", value.max)):
        lines.append(f'{name}{{{labels}{sep}quantile="{quantile}"}} {format_value(figure)}\n')
