"""Metric groups in Prometheus' terms, as Flink's Prometheus reporter names them.

A metric ``numRecordsIn`` of a group with logical scope ``taskmanager.job.task.operator`` is
``flink_taskmanager_job_task_operator_numRecordsIn``; the group's scope variables are its labels
(``job_name``, ``task_name``, ``subtask_index``, ...). Characters Prometheus does not allow
(anything but ``[a-zA-Z0-9:_]``) become ``_`` in names, and in label values too unless the
reporter's ``filterLabelValueCharacters`` is false. Counters, meters (their rate) and gauges are
Prometheus gauges; a gauge whose value is no number (a path, ``n/a``) reports 0; booleans 1 and 0;
a histogram is a summary: ``_count`` and the quantiles 0 (its minimum), 0.5, 0.75, 0.95, 0.98, 0.99,
0.999 and 1 (its maximum), without a ``_sum`` (Flink's ``HistogramSummaryProxy``).
"""

from __future__ import annotations

import re
from typing import Any, Iterable

from prometheus_client.metrics_core import Metric

from streamkernel.runtime.metrics.groups import HistogramStatistics, MetricGroupSnapshot, MetricType
from streamkernel.runtime.metrics.reporter_setup import ReporterSetup

__all__ = ["prometheus_families", "replace_invalid_chars", "QUANTILES", "SCOPE_PREFIX"]

#: Every metric name starts with this.
SCOPE_PREFIX = "flink_"
#: The quantiles of a histogram's summary, between its minimum (0.0) and maximum (1.0).
QUANTILES = (0.5, 0.75, 0.95, 0.98, 0.99, 0.999)
_INVALID = re.compile(r"[^a-zA-Z0-9:_]")


def replace_invalid_chars(text: str) -> str:
    """``text`` with every character Prometheus does not allow in a name replaced by ``_``.

        >>> replace_invalid_chars("Source: Collection -> Map")
        'Source:_Collection____Map'
    """
    return _INVALID.sub("_", text)


def _number(value: Any) -> float:
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float)):
        return float(value)
    return 0.0  # Flink's reporter: a gauge of another type reports 0


def prometheus_families(groups: Iterable[MetricGroupSnapshot], setup: ReporterSetup) -> list[Metric]:
    """One Prometheus metric family per name, with a sample per group that has it (those ``setup``'s
    filter keeps), labelled with the group's variables less the excluded ones plus the additional ones."""
    families: dict[str, Metric] = {}
    label_value = replace_invalid_chars if setup.filter_label_values else str
    for group in groups:
        scope = group.logical_scope()
        labels = {replace_invalid_chars(k): label_value(str(v)) for k, v in group.variables.items()
                  if k not in setup.excluded_variables}
        labels.update({replace_invalid_chars(k): label_value(v) for k, v in setup.additional_variables.items()})
        prefix = SCOPE_PREFIX + "_".join(replace_invalid_chars(c) for c in group.scope) + "_"
        help_scope = "_".join(replace_invalid_chars(c) for c in group.scope)
        for name, value in group.metrics.items():
            metric_type = group.type_of(name)
            if not setup.metric_filter.accepts(scope, name, metric_type):
                continue
            full_name = prefix + replace_invalid_chars(name)
            histogram = metric_type is MetricType.HISTOGRAM and isinstance(value, HistogramStatistics)
            family = families.get(full_name)
            if family is None:
                family = families[full_name] = Metric(full_name, f"{name} (scope: {help_scope})",
                                                      "summary" if histogram else "gauge")
            if histogram:
                _add_summary(family, full_name, labels, value)
            else:
                family.add_sample(full_name, labels, _number(value))
    return list(families.values())


def _add_summary(family: Metric, name: str, labels: dict[str, str], value: HistogramStatistics) -> None:
    family.add_sample(name + "_count", labels, float(value.count))
    family.add_sample(name, {**labels, "quantile": "0.0"}, value.min)
    for q in QUANTILES:
        family.add_sample(name, {**labels, "quantile": str(q)}, value.quantile(q))
    family.add_sample(name, {**labels, "quantile": "1.0"}, value.max)
