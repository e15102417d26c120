"""Which metric reporters a process starts, and how: Flink's ``ReporterSetup`` from the configuration.

A reporter is named by its keys, as in Flink::

    metrics.reporters: prom                      # optional: only these of the configured reporters
    metrics.reporter.prom.factory.class: org.apache.flink.metrics.prometheus.PrometheusReporterFactory
    metrics.reporter.prom.port: 9249-9260        # a port, a range, or a list of both: the first free one
    metrics.reporter.prom.filter.includes: *:numRecords*;*.job:*   # Flink's filters, ';'-separated
    metrics.reporter.prom.filter.excludes: ...
    metrics.reporter.prom.scope.variables.excludes: task_attempt_id;tm_id   # labels left out
    metrics.reporter.prom.scope.variables.additional: cluster:prod,team:data # labels added

:func:`reporter_setups` parses all of it before anything starts; a wrong value raises
IllegalConfigurationError naming its key. Unlike Flink, which logs and starts the cluster without
the reporter, an unknown factory class, a reporter named in ``metrics.reporters`` without one, or a
reporter configured with Flink 1.x's ``class`` key fail the start: a cluster someone meant to
monitor does not run unmonitored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from streamkernel.common.options import MetricOptions
from streamkernel.errors import IllegalConfigurationError, StreamKernelError
from streamkernel.runtime.metrics.metric_filter import DEFAULT_INCLUDES, MetricFilter

__all__ = ["ReporterSetup", "ReporterStartError", "reporter_setups", "port_candidates", "PROMETHEUS_REPORTER_FACTORY",
           "REPORTER_FACTORIES", "REPORTERS_LIST", "REPORTER_PREFIX"]

#: The configuration key listing the reporters to start (Flink's ``MetricOptions.REPORTERS_LIST``).
REPORTERS_LIST = MetricOptions.REPORTERS_LIST.key()
#: Every reporter's keys start with this, then its name.
REPORTER_PREFIX = "metrics.reporter."
#: Flink's Prometheus reporter factory, the one streamkernel has.
PROMETHEUS_REPORTER_FACTORY = "org.apache.flink.metrics.prometheus.PrometheusReporterFactory"
#: The factory classes streamkernel knows.
REPORTER_FACTORIES = (PROMETHEUS_REPORTER_FACTORY,)
#: Flink's PrometheusReporterFactory's default port.
DEFAULT_PROMETHEUS_PORT = "9249"



class ReporterStartError(StreamKernelError):
    """A metric reporter could not start (every port of its range taken); the message names the key."""


_NAMED_KEY = re.compile(re.escape(REPORTER_PREFIX) + r"([^.\s]+)\.(factory\.class|class)$")
_TRUE, _FALSE = ("true", "yes", "1", "on"), ("false", "no", "0", "off")


def port_candidates(text: str, key: str) -> tuple[int, ...]:
    """The ports of Flink's port specification ``text`` in order: a port, a range ``9249-9260``, or a
    comma-separated list of both (Flink's ``NetUtils.getPortRangeFromString``); ``0``: any free port.

        >>> port_candidates("9249-9251,9300", "metrics.reporter.prom.port")
        (9249, 9250, 9251, 9300)
    """
    ports: list[int] = []
    for part in str(text).split(","):
        first, sep, last = part.strip().partition("-")
        try:
            low = int(first.strip())
            high = int(last.strip()) if sep else low
        except ValueError:
            low, high = -1, -1
        if not (0 <= low <= high <= 65535):
            raise IllegalConfigurationError(
                f"Invalid value {text!r} for key '{key}': expected a port (0-65535), a range 'first-last' "
                f"(first <= last), or a comma-separated list of both, e.g. '9249-9260'")
        ports.extend(range(low, high + 1))
    return tuple(ports)


def _list(text: Any) -> tuple[str, ...]:
    """Flink's list option: ``;``-separated, blanks dropped."""
    return tuple(part.strip() for part in str(text).split(";") if part.strip())


def _variables_map(text: str, key: str) -> dict[str, str]:
    """Flink's map option ``k1:v1,k2:v2``."""
    result: dict[str, str] = {}
    for pair in (p.strip() for p in str(text).split(",") if p.strip()):
        name, sep, value = pair.partition(":")
        if not sep or not name.strip():
            raise IllegalConfigurationError(
                f"Invalid value {text!r} for key '{key}': expected 'name:value' pairs separated by ',', "
                f"e.g. 'cluster:prod,team:data'")
        result[name.strip().strip("<>")] = value.strip()
    return result


def _flag(text: str, key: str) -> bool:
    value = str(text).strip().lower()
    if value not in _TRUE + _FALSE:
        raise IllegalConfigurationError(f"Could not parse value {text!r} for key '{key}': expected true or false")
    return value in _TRUE


@dataclass(frozen=True)
class ReporterSetup:
    """One configured reporter: its ``name``, ``factory_class``, the ``ports`` it may bind (in order;
    ``port_text`` as written), its ``metric_filter``, the scope variables it leaves out
    (``excluded_variables``, without angle brackets) and adds (``additional_variables``), whether it
    replaces characters Prometheus does not allow in label values (``filter_label_values``, Flink's
    ``filterLabelValueCharacters``), and all its keys without the ``metrics.reporter.<name>.`` prefix."""

    name: str
    factory_class: str
    ports: tuple[int, ...]
    port_text: str
    metric_filter: MetricFilter
    excluded_variables: frozenset[str] = frozenset()
    additional_variables: Mapping[str, str] = field(default_factory=dict)
    filter_label_values: bool = True
    options: Mapping[str, str] = field(default_factory=dict)

    def key(self, suffix: str) -> str:
        """This reporter's full key for ``suffix`` (``port`` -> ``metrics.reporter.prom.port``)."""
        return f"{REPORTER_PREFIX}{self.name}.{suffix}"


def _configured_names(configuration: Mapping[str, Any]) -> list[str]:
    found = sorted({m.group(1) for key in configuration if (m := _NAMED_KEY.match(str(key)))})
    listed_text = str(configuration.get(REPORTERS_LIST, "") or "")
    listed = [n for n in re.split(r"\s*,\s*", listed_text.strip()) if n]
    for name in listed:
        if name not in found:
            raise IllegalConfigurationError(
                f"Invalid value {listed_text!r} for key '{REPORTERS_LIST}': it names reporter {name!r}, but "
                f"'{REPORTER_PREFIX}{name}.factory.class' is not set")
    return [n for n in found if not listed or n in listed]


def _setup(name: str, configuration: Mapping[str, Any]) -> ReporterSetup:
    prefix = f"{REPORTER_PREFIX}{name}."
    options = {str(k)[len(prefix):]: str(v) for k, v in configuration.items() if str(k).startswith(prefix)}
    factory = options.get("factory.class", "").strip()
    if not factory:
        raise IllegalConfigurationError(
            f"Key '{prefix}class' is not supported (Flink 2.x loads reporters through factories): set "
            f"'{prefix}factory.class: {PROMETHEUS_REPORTER_FACTORY}'")
    if factory not in REPORTER_FACTORIES:
        raise IllegalConfigurationError(
            f"Invalid value {factory!r} for key '{prefix}factory.class': no such reporter factory; available "
            f"factories: {', '.join(REPORTER_FACTORIES)}")
    port_text = options.get("port", DEFAULT_PROMETHEUS_PORT)
    return ReporterSetup(
        name=name, factory_class=factory, ports=port_candidates(port_text, prefix + "port"), port_text=port_text,
        metric_filter=MetricFilter.parse(_list(options.get("filter.includes", ";".join(DEFAULT_INCLUDES))),
                                         _list(options.get("filter.excludes", "")), key=prefix + "filter.includes",
                                         excludes_key=prefix + "filter.excludes"),
        excluded_variables=frozenset(v.strip("<>") for v in _list(options.get("scope.variables.excludes", "."))),
        additional_variables=_variables_map(options.get("scope.variables.additional", ""),
                                            prefix + "scope.variables.additional"),
        filter_label_values=_flag(options.get("filterLabelValueCharacters", "true"),
                                  prefix + "filterLabelValueCharacters"),
        options=options)


def reporter_setups(configuration: Mapping[str, Any]) -> list[ReporterSetup]:
    """Every reporter ``configuration`` configures (only those ``metrics.reporters`` lists, when set),
    by name. IllegalConfigurationError names the key of the first wrong value.

        >>> [s.ports[:2] for s in reporter_setups({
        ...     "metrics.reporter.prom.factory.class": PROMETHEUS_REPORTER_FACTORY,
        ...     "metrics.reporter.prom.port": "9249-9260"})]
        [(9249, 9250)]
    """
    return [_setup(name, configuration) for name in _configured_names(configuration)]
