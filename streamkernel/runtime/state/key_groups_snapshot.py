"""Splitting and merging snapshots by key group: what rescaling a keyed operator needs.

Keyed snapshots (``{"kind": "keyed", ...}``, see :mod:`streamkernel.runtime.state.api`) and
timer snapshots (``{"kind": "timers", "name": ..., "max_parallelism": m,
"event_time": {key_group: [(key, namespace, timestamp), ...]}, "processing_time": {...}}``)
keep their entries grouped by key group. Restoring at a new parallelism gives each new
subtask the key groups of its range (``keygroups.key_group_range_for_operator``) from all
old subtasks' snapshots: nothing is re-hashed, whole groups move.

>>> old = [{"kind": "keyed", "max_parallelism": 4, "states": {"s": {"type": "value",
...        "key_groups": {0: [("a", None, 1)], 3: [("b", None, 2)]}}}}]
>>> select_key_groups(old, range(2, 4))["states"]["s"]["key_groups"]
{3: [('b', None, 2)]}
"""

from __future__ import annotations

from typing import Dict, Iterable, List, Optional

from streamkernel.errors import InvalidProgramError
from streamkernel.graph.keygroups import key_group_range_for_operator

__all__ = ["select_key_groups", "split_by_key_group_ranges", "TIMER_DOMAINS"]

#: the key-group-indexed parts of a timer snapshot
TIMER_DOMAINS = ("event_time", "processing_time")


def _merge_groups(into: Dict[int, list], groups: Dict[int, list], key_group_range: range) -> None:
    for group, entries in groups.items():
        if group in key_group_range:  # O(1) for a range
            into.setdefault(group, []).extend(entries)


def select_key_groups(
    snapshots: Iterable[Optional[dict]],
    key_group_range: range,
    max_parallelism: Optional[int] = None,
) -> dict:
    """One snapshot holding only the entries of ``key_group_range``, taken from all ``snapshots``.

    ``snapshots`` are keyed snapshots, or timer snapshots, of one operator (None entries —
    subtasks without state — are skipped). The entries are not copied. Raises if the
    snapshots disagree on max parallelism or differ from ``max_parallelism`` (Flink cannot
    change the max parallelism of keyed state on restore).
    """
    kind: Optional[str] = None
    result: dict = {}
    for snapshot in snapshots:
        if not snapshot:
            continue
        snapshot_kind = snapshot.get("kind")
        if snapshot_kind not in ("keyed", "timers"):
            raise InvalidProgramError(
                f"select_key_groups: expected keyed or timer snapshots, got kind {snapshot_kind!r}"
            )
        if kind is None:
            kind = snapshot_kind
            max_parallelism = _check_max_parallelism(snapshot, max_parallelism)
            result = {"kind": kind, "max_parallelism": max_parallelism}
            if kind == "keyed":
                result["states"] = {}
            else:
                result["name"] = snapshot.get("name")
                for domain in TIMER_DOMAINS:
                    result[domain] = {}
        elif snapshot_kind != kind:
            raise InvalidProgramError(f"select_key_groups: cannot mix {kind} and {snapshot_kind} snapshots")
        else:
            _check_max_parallelism(snapshot, max_parallelism)
        if kind == "keyed":
            for name, state in snapshot["states"].items():
                into = result["states"].setdefault(
                    name, {"type": state["type"], "ttl": bool(state.get("ttl")), "key_groups": {}}
                )
                if into["type"] != state["type"]:
                    raise InvalidProgramError(
                        f"keyed state '{name}' is {into['type']} state in one snapshot and "
                        f"{state['type']} state in another"
                    )
                _merge_groups(into["key_groups"], state["key_groups"], key_group_range)
        else:
            for domain in TIMER_DOMAINS:
                _merge_groups(result[domain], snapshot.get(domain, {}), key_group_range)
    if kind is None:
        return {"kind": "keyed", "max_parallelism": max_parallelism, "states": {}}
    return result


def _check_max_parallelism(snapshot: dict, expected: Optional[int]) -> Optional[int]:
    found = snapshot.get("max_parallelism")
    if expected is not None and found != expected:
        raise InvalidProgramError(
            f"restoring state taken with max parallelism {found} into an operator with max "
            f"parallelism {expected}: the max parallelism of keyed state cannot change "
            "(set the operator's max parallelism back to the old value)"
        )
    return found


def split_by_key_group_ranges(
    snapshots: Iterable[Optional[dict]], max_parallelism: int, new_parallelism: int
) -> List[dict]:
    """The snapshots of one keyed operator, redistributed to ``new_parallelism`` subtasks.

    Element ``i`` holds exactly the key groups of subtask ``i``'s range.
    """
    if new_parallelism <= 0 or new_parallelism > max_parallelism:
        raise InvalidProgramError(
            f"split_by_key_group_ranges: new_parallelism must be in 1..{max_parallelism} "
            f"(the max parallelism), got {new_parallelism}"
        )
    snapshots = list(snapshots)
    return [
        select_key_groups(snapshots, key_group_range_for_operator(max_parallelism, new_parallelism, index), max_parallelism)
        for index in range(new_parallelism)
    ]
