"""Flink's metric resources' answers: a metric collection (``[{"id"}]`` or ``[{"id", "value"}]``)
and aggregated metrics (``[{"id", "min", "max", "avg", "sum", "skew"}]``) over several
entities: the subtasks of a vertex, the jobs (``/jobs/metrics``), the TaskManagers
(``/taskmanagers/metrics``)."""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Optional, Sequence

from streamkernel.runtime.rest.json_views.io_metrics import aggregate

__all__ = ["aggregated_metrics"]


def aggregated_metrics(per_entity: Sequence[Mapping[str, Any]], wanted: Optional[Iterable[str]],
                       modes: Iterable[str]) -> list[dict]:
    """Without ``wanted``: every metric id any entity has (``[{"id"}]``, sorted); else, for each
    wanted id some entity has as a number, its aggregates over those entities (``modes``)."""
    if wanted is None:
        return [{"id": name} for name in sorted({name for values in per_entity for name in values})]
    modes = list(modes)
    rows = []
    for name in wanted:
        numbers = [float(values[name]) for values in per_entity
                   if isinstance(values.get(name), (int, float)) and not isinstance(values.get(name), bool)]
        if numbers:
            rows.append({"id": name, **aggregate(numbers, modes)})
    return rows
