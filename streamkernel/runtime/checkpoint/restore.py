"""Assigning a completed checkpoint's state to the subtasks of a (possibly rescaled) job.

Flink's ``StateAssignmentOperation``: operators are matched by key (uid, or ``node-<generated id>``
without one), and each operator's state is redistributed to its new parallelism:

* **keyed state and timers** move by key group: new subtask *i* gets every key group of
  its range (``keygroups.key_group_range_for_operator``) from all old subtasks. The max
  parallelism cannot change, and the parallelism cannot exceed it.
* **operator list state** goes through ``redistribute_operator_state`` (split lists
  evenly, union lists to everyone, broadcast state copied).
* **raw operator state** (what ``StreamOperator.snapshot_state`` returned: source reader
  positions, sink writer transactions, async in-flight records) — the contract with the
  operators that own it:

  - parallelism unchanged: subtask *i* gets old subtask *i*'s raw state as ``"raw"``
    (its ``OperatorContext.restored_state`` is exactly what it returned);
  - parallelism changed: ``"raw"`` is None and ``"raw_all"`` is the list of every old
    subtask's raw state, in old subtask order (entries may be None), given to *every* new
    subtask; the Task hands it to the operator as ``restored_state == {"raw_all": [...]}``.
    An operator that can redistribute (a source re-assigning its splits, a sink recovering
    every old transaction) picks its share from the full list — e.g. new subtask *i* of
    *n* takes the splits whose index ``% n == i``, a committing sink commits what only
    one of them should (index 0) — and an operator that cannot must refuse clearly.

The result maps ``(vertex id, subtask index)`` to ``{operator key: {"keyed": [snapshot],
"timers": [snapshots], "operator": snapshot, "raw": ..., "raw_all": [...]}}``, the shape of
``TaskDeploymentDescriptor.restored_state`` (see :mod:`streamkernel.runtime.tasks.task_checkpoint`);
subtasks that get nothing are absent.

* **in-flight records** of an unaligned checkpoint (``"channel_state"`` of a chain's head,
  :mod:`.channel_state`), fed to the operator before any new record: at the same
  parallelism subtask *i* gets old subtask *i*'s; at another, they are redistributed as
  the partitioner of each input's edge in the new job routes them
  (:mod:`.in_flight_rescale`, Flink's ``SubtaskStateMapper``: by key group for HASH,
  whole old subtasks round-robin for REBALANCE/SHUFFLE/RESCALE/FORWARD, one copy per new
  subtask for BROADCAST); a CUSTOM-partitioned input fails the restore naming the
  checkpoint, the operator and the partitioner.

State of an operator that no longer exists fails the restore unless unclaimed state is
allowed (Flink's ``allowNonRestoredState``: ``execution.state-recovery.ignore-unclaimed-state``,
1.x ``execution.savepoint.ignore-unclaimed-state``). Operators without state never count.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Union

from streamkernel.common.config_options import ConfigOption
from streamkernel.common.options import StateRecoveryOptions
from streamkernel.errors import InvalidProgramError
from streamkernel.graph.job_graph import JobGraph, build_job_graph
from streamkernel.graph.keygroups import key_group_range_for_operator
from streamkernel.graph.stream_graph import StreamGraph, StreamNode
from streamkernel.graph.partitioners import StreamPartitioner
from streamkernel.runtime.checkpoint.channel_state import has_channel_state
from streamkernel.runtime.checkpoint.in_flight_rescale import redistribute_channel_state
from streamkernel.runtime.checkpoint.metadata import CompletedCheckpoint, operator_key
from streamkernel.runtime.state.key_groups_snapshot import TIMER_DOMAINS, select_key_groups
from streamkernel.runtime.state.operator_state import redistribute_operator_state

__all__ = [
    "STATE_RECOVERY_PATH",
    "IGNORE_UNCLAIMED_STATE",
    "recovery_path",
    "ignore_unclaimed_state",
    "assign_restored_state",
    "operator_has_state",
]

def _keys(option: ConfigOption[Any]) -> tuple[str, ...]:
    return (option.key(),) + option.deprecated_keys()


STATE_RECOVERY_PATH = _keys(StateRecoveryOptions.SAVEPOINT_PATH)
"""Keys of the checkpoint or savepoint a job starts from (2.x, then 1.x)."""
IGNORE_UNCLAIMED_STATE = _keys(StateRecoveryOptions.SAVEPOINT_IGNORE_UNCLAIMED_STATE)
"""Keys allowing state that no operator of the job claims (2.x, then 1.x; default false)."""

SubtaskKey = tuple[int, int]


def recovery_path(conf: Mapping[str, Any]) -> Optional[str]:
    """The path of ``execution.state-recovery.path`` (or 1.x ``execution.savepoint.path``), or None."""
    set_keys = {k: conf[k] for k in STATE_RECOVERY_PATH if conf.get(k) not in (None, "")}  # "": unset
    return StateRecoveryOptions.SAVEPOINT_PATH.get(set_keys) if set_keys else None


def ignore_unclaimed_state(conf: Mapping[str, Any]) -> bool:
    """Whether ``execution.state-recovery.ignore-unclaimed-state`` (or its 1.x key) is true."""
    return StateRecoveryOptions.SAVEPOINT_IGNORE_UNCLAIMED_STATE.get(conf)


def _has_entries(value: Any) -> bool:
    return value is not None and not (isinstance(value, (list, tuple, dict, set)) and not value)


def operator_has_state(state: Optional[Mapping[str, Any]]) -> bool:
    """Whether one operator's part of a task snapshot holds any state: keyed entries, timers,
    operator state entries, or raw state that is not None/empty (a dict counts when one of
    its values is non-empty, so a stateless sink's ``{"writer": None}`` does not)."""
    if not state:
        return False
    if has_channel_state(state):
        return True
    keyed = state.get("keyed")
    if keyed and any(groups for s in keyed.get("states", {}).values() for groups in s["key_groups"].values()):
        return True
    for timers in state.get("timers") or ():
        if any(entries for domain in TIMER_DOMAINS for entries in (timers.get(domain) or {}).values()):
            return True
    operator = state.get("operator")
    if operator and any(_has_entries(s.get("entries")) for s in operator.get("states", {}).values()):
        return True
    raw = state.get("raw")
    if isinstance(raw, dict):
        return any(_has_entries(value) for value in raw.values())
    return raw is not None


def assign_restored_state(
    completed: CompletedCheckpoint,
    graph: Union[JobGraph, StreamGraph],
    parallelism: Optional[Mapping[int, int]] = None,
    *,
    allow_non_restored_state: Optional[bool] = None,
) -> dict[SubtaskKey, dict[str, dict]]:
    """The restored state of every subtask of the new job (module docstring).

    ``parallelism`` maps job vertex ids to a parallelism replacing the graph's (the
    default: the graph's own). ``allow_non_restored_state`` None reads
    :data:`IGNORE_UNCLAIMED_STATE` from the StreamGraph's configuration. Raises
    :class:`InvalidProgramError` naming the operator when its state has no matching
    operator, when the new parallelism exceeds its max parallelism, or when the max
    parallelism of keyed state changed; :class:`CheckpointCorruptedError` for a bad file.
    """
    job_graph = graph if isinstance(graph, JobGraph) else build_job_graph(graph)
    if allow_non_restored_state is None:
        allow_non_restored_state = ignore_unclaimed_state(job_graph.stream_graph.configuration)
    overrides = dict(parallelism or {})
    new_operators: dict[str, tuple[StreamNode, int, int]] = {}
    for vertex in job_graph.vertices:
        new_parallelism = overrides.get(vertex.id, vertex.parallelism)
        if new_parallelism < 1:
            raise InvalidProgramError(f"assign_restored_state: parallelism of vertex {vertex.name!r} must be "
                                      f"positive, got {new_parallelism}")
        for node in job_graph.operators(vertex.id):
            new_operators[operator_key(node)] = (node, vertex.id, new_parallelism)

    old_states: dict[str, dict[int, dict]] = {}
    for (_, subtask_index), snapshot in completed.task_states().items():
        for key, state in snapshot.items():
            old_states.setdefault(key, {})[subtask_index] = state
    stateful = {key: by_index for key, by_index in old_states.items()
                if any(operator_has_state(state) for state in by_index.values())}

    unclaimed = sorted(key for key in stateful if key not in new_operators)
    if unclaimed and not allow_non_restored_state:
        names = ", ".join(_describe(completed, key) for key in unclaimed)
        raise InvalidProgramError(
            f"operator state of {names} has no matching uid in the job; set uid() on the operator or allow "
            "non-restored state (execution.state-recovery.ignore-unclaimed-state: true); the uid must be the "
            f"one the operator had when {_kind(completed)} {completed.checkpoint_id} was taken")

    inputs: dict[int, dict[int, list[StreamPartitioner]]] = {}  # node id -> input index -> partitioners
    for edge in job_graph.edges:
        type_number = edge.stream_edge.type_number
        input_index = type_number - 1 if type_number in (1, 2) else 0  # as the scheduler numbers inputs
        inputs.setdefault(edge.stream_edge.target_id, {}).setdefault(input_index, []).append(edge.partitioner)

    result: dict[SubtaskKey, dict[str, dict]] = {}
    for key, by_index in stateful.items():
        if key not in new_operators:
            continue
        node, vertex_id, new_parallelism = new_operators[key]
        assigned = _assign_operator(completed, key, by_index, node, new_parallelism, inputs.get(node.id, {}))
        for index, state in enumerate(assigned):
            if state is not None:
                result.setdefault((vertex_id, index), {})[key] = state
    return result


def _assign_operator(completed: CompletedCheckpoint, key: str, by_index: dict[int, dict], node: StreamNode,
                     new_parallelism: int, inputs: Mapping[int, list[StreamPartitioner]]) -> list[Optional[dict]]:
    """The state of one operator for each of its ``new_parallelism`` subtasks (``inputs``: the
    partitioners of the edges reaching each of its input indexes in the new job)."""
    recorded = completed.metadata.operators.get(key)
    old_parallelism = recorded.parallelism if recorded is not None else max(by_index) + 1
    old = [by_index.get(index) or {} for index in range(max(old_parallelism, max(by_index) + 1))]
    keyed = [state["keyed"] for state in old if state.get("keyed")]
    timers = [timer for state in old for timer in (state.get("timers") or ())]
    name = _describe(completed, key)
    if new_parallelism > node.max_parallelism:
        raise InvalidProgramError(
            f"cannot restore {name} at parallelism {new_parallelism}: it exceeds the operator's max "
            f"parallelism {node.max_parallelism}; choose a parallelism of at most {node.max_parallelism}")
    max_parallelism = node.max_parallelism
    if keyed or timers:
        old_max = keyed[0]["max_parallelism"] if keyed else (recorded.max_parallelism if recorded else None)
        if old_max is not None and old_max != node.max_parallelism:
            raise InvalidProgramError(
                f"cannot restore the keyed state of {name}: it was taken with max parallelism {old_max}, the "
                f"operator now has max parallelism {node.max_parallelism}; the max parallelism of keyed state "
                f"cannot change (set_max_parallelism({old_max}) on the operator or the environment)")
        max_parallelism = old_max or max_parallelism
    rescaled = len(old) != new_parallelism
    channel_states: list[Optional[dict]] = [None] * new_parallelism
    if rescaled and any(has_channel_state(state) for state in old):
        channel_states = redistribute_channel_state(
            [state.get("channel_state") for state in old], new_parallelism, inputs,
            describe=lambda why: (
                f"cannot restore {name} at parallelism {new_parallelism} from unaligned {_kind(completed)} "
                f"{completed.checkpoint_id} (taken at parallelism {len(old)}): {why}; restore it at parallelism "
                f"{len(old)}, or rescale from a savepoint or an aligned checkpoint (savepoints are always aligned)"))
    operator_snapshots = [state.get("operator") for state in old]
    has_operator_state = any(operator_snapshots)
    redistributed = redistribute_operator_state(operator_snapshots, new_parallelism) if has_operator_state else None
    raws = [state.get("raw") for state in old]
    timer_names = list(dict.fromkeys(timer.get("name") for timer in timers))

    result: list[Optional[dict]] = []
    for index in range(new_parallelism):
        key_groups = key_group_range_for_operator(max_parallelism, new_parallelism, index)
        state: dict[str, Any] = {"keyed": None, "timers": [], "operator": None, "raw": None}
        if keyed and rescaled:  # whole key groups move: this subtask's range, from every old subtask
            state["keyed"] = [select_key_groups(keyed, key_groups, max_parallelism)]
        elif keyed and old[index].get("keyed"):  # same parallelism: the same key groups as before
            state["keyed"] = [old[index]["keyed"]]
        for timer_name in timer_names:
            same = [timer for timer in timers if timer.get("name") == timer_name]
            timer_max = same[0].get("max_parallelism") or max_parallelism
            timer_groups = key_group_range_for_operator(timer_max, new_parallelism, index)
            state["timers"].append(select_key_groups(same, timer_groups, timer_max))
        if redistributed is not None:
            state["operator"] = redistributed[index]
        if rescaled:
            if any(raw is not None for raw in raws):
                state["raw_all"] = list(raws)
            if channel_states[index] is not None:
                state["channel_state"] = channel_states[index]
        else:
            state["raw"] = raws[index]
            if has_channel_state(old[index]):
                state["channel_state"] = old[index]["channel_state"]
        result.append(state if _assigned_has_state(state) else None)
    return result


def _assigned_has_state(state: dict) -> bool:
    """Whether one new subtask's assigned state (lists of snapshots) holds anything."""
    if any(operator_has_state({"keyed": keyed}) for keyed in state["keyed"] or ()):
        return True
    if operator_has_state({"timers": state["timers"], "operator": state["operator"]}):
        return True
    return state["raw"] is not None or "raw_all" in state or "channel_state" in state


def _kind(completed: CompletedCheckpoint) -> str:
    return "savepoint" if completed.is_savepoint else "checkpoint"


def _describe(completed: CompletedCheckpoint, key: str) -> str:
    recorded = completed.metadata.operators.get(key)
    if recorded is None or recorded.name == key:
        return f"'{key}'"
    return f"'{key}' ({recorded.name})"
