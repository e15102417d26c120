"""Which metrics a reporter reports: Flink's ``DefaultMetricFilter`` (``filter.includes`` / ``filter.excludes``).

A filter is ``<scope>[:<name>[,<name>...][:<type>[,<type>...]]]``: ``scope`` a pattern of the logical
scope (``*`` any characters; ``,`` separates alternatives), ``name`` patterns of the metric's name,
``type`` some of ``counter``, ``meter``, ``gauge``, ``histogram``. A metric is reported when no
exclude matches it and an include does (the default include, ``*:*:*``, matches everything).

    >>> only_io = MetricFilter.parse(["*.job.task.operator:numRecords*"], [], key="filter.includes")
    >>> only_io.accepts("taskmanager.job.task.operator", "numRecordsIn", MetricType.COUNTER)
    True
    >>> only_io.accepts("taskmanager.job.task", "numRecordsIn", MetricType.COUNTER)
    False

As in Flink, a pattern is a regular expression once every ``*`` became ``.*`` (a ``.`` matches any
character, so ``jobmanager.job`` also matches ``jobmanagerXjob``; no logical scope has such a name).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from streamkernel.errors import IllegalConfigurationError
from streamkernel.runtime.metrics.groups import MetricType

__all__ = ["MetricFilter", "FilterSpec", "DEFAULT_INCLUDES"]

#: Flink's default ``filter.includes``: every metric.
DEFAULT_INCLUDES = ("*:*:*",)
_TYPES = {t.value: t for t in MetricType}


@dataclass(frozen=True)
class FilterSpec:
    """One parsed filter: patterns of the scope and the name, and the types it applies to."""

    scope: re.Pattern[str]
    name: re.Pattern[str]
    types: frozenset[MetricType]

    def matches(self, logical_scope: str, name: str, metric_type: MetricType) -> bool:
        """True when the metric's scope, name and type all match."""
        return (metric_type in self.types and self.name.fullmatch(name) is not None
                and self.scope.fullmatch(logical_scope) is not None)


def _pattern(component: str) -> re.Pattern[str]:
    return re.compile("(" + "|".join(part.replace("*", ".*") for part in component.split(",")) + ")")


def _types(component: str, key: str, text: str) -> frozenset[MetricType]:
    parts = [p.strip().lower() for p in component.split(",")]
    if parts == ["*"]:
        return frozenset(MetricType)
    unknown = [p for p in parts if p not in _TYPES]
    if unknown:
        raise IllegalConfigurationError(
            f"Invalid value {text!r} for key '{key}': unknown metric type {unknown[0]!r} (expected "
            f"{', '.join(_TYPES)} or *)")
    return frozenset(_TYPES[p] for p in parts)


@dataclass(frozen=True)
class MetricFilter:
    """A reporter's includes and excludes (see the module)."""

    includes: tuple[FilterSpec, ...]
    excludes: tuple[FilterSpec, ...] = ()

    @staticmethod
    def parse(includes: Sequence[str], excludes: Sequence[str], key: str = "filter.includes",
              excludes_key: str = "filter.excludes") -> "MetricFilter":
        """Parse Flink's filter strings; IllegalConfigurationError names ``key`` (or ``excludes_key``) of a bad one."""
        def spec(text: str, which: str) -> FilterSpec:
            parts = text.strip().split(":")
            if len(parts) > 3 or not parts[0]:
                raise IllegalConfigurationError(
                    f"Invalid value {text!r} for key '{which}': expected <scope>[:<name>[,<name>][:<type>[,<type>]]], "
                    f"e.g. '*.job.task.operator:numRecords*:counter'")
            return FilterSpec(_pattern(parts[0]), _pattern(parts[1] if len(parts) > 1 else "*"),
                              _types(parts[2], which, text) if len(parts) > 2 else frozenset(MetricType))

        return MetricFilter(tuple(spec(t, key) for t in includes), tuple(spec(t, excludes_key) for t in excludes))

    def accepts(self, logical_scope: str, name: str, metric_type: MetricType) -> bool:
        """Whether the metric ``name`` of a group with ``logical_scope`` (dot-separated) is reported."""
        if any(spec.matches(logical_scope, name, metric_type) for spec in self.excludes):
            return False
        return any(spec.matches(logical_scope, name, metric_type) for spec in self.includes)
