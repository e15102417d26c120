"""How a slot's managed memory is shared among the operators of a job (Flink's
``ManagedMemoryUseCase``, ``ManagedMemoryUtils`` and ``StreamingJobGraphGenerator``'s
``setManagedMemoryFraction``).

Operators declare what they use managed memory for:

* ``OPERATOR`` (operator scope, with a weight): in BATCH execution mode, every keyed operator
  sorts its input (Flink's ``SortingDataInput``), with the weight
  ``execution.sorted-inputs.memory`` in MiB (128 by default; a weight, not a size);
* ``STATE_BACKEND`` (slot scope): every keyed operator, used only when the state backend keeps
  its memory in managed memory (RocksDB; not the heap backend, not BATCH mode's per-key one);
* ``PYTHON`` (slot scope): PyFlink's Python workers. streamkernel's operators run in the
  TaskManager's own interpreter, so none declares it (docs/memory.md).

``taskmanager.memory.managed.consumer-weights`` (``OPERATOR:70,STATE_BACKEND:70,PYTHON:30``)
splits a slot among the use cases declared in its slot sharing group; an operator-scope use
case is split further among its operators by their weights. Each operator's share is a fraction
of its slot, rounded down to 16 decimal places as Flink's ``getFractionRoundedDown``; the job
graph carries them (:attr:`~streamkernel.graph.job_graph.JobVertex.managed_memory_fractions`).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from decimal import ROUND_DOWN, Decimal
from typing import Any, Iterable

from streamkernel.errors import IllegalConfigurationError

__all__ = ["ManagedMemoryUseCase", "consumer_weights", "fraction_rounded_down", "operator_scope_weight",
           "sorted_inputs", "state_backend_uses_managed_memory", "managed_memory_fractions"]

_FRACTION_SCALE = Decimal(1).scaleb(-16)


class ManagedMemoryUseCase(enum.Enum):
    """What managed memory is used for, and at which scope its share is decided."""

    OPERATOR = "OPERATOR"
    STATE_BACKEND = "STATE_BACKEND"
    PYTHON = "PYTHON"

    @property
    def slot_scope(self) -> bool:
        """True for the use cases shared by a whole slot (state backend, Python)."""
        return self is not ManagedMemoryUseCase.OPERATOR


#: the consumer names each use case is read from, in Flink's fallback order (DATAPROC: Flink 1.x)
_CONSUMER_NAMES = {
    ManagedMemoryUseCase.OPERATOR: ("OPERATOR", "DATAPROC"),
    ManagedMemoryUseCase.STATE_BACKEND: ("STATE_BACKEND", "DATAPROC"),
    ManagedMemoryUseCase.PYTHON: ("PYTHON",),
}


def consumer_weights(configuration: Mapping[str, Any]) -> dict[ManagedMemoryUseCase, int]:
    """The weight of each use case from ``taskmanager.memory.managed.consumer-weights``.

    >>> consumer_weights({}) == {ManagedMemoryUseCase.OPERATOR: 70, ManagedMemoryUseCase.STATE_BACKEND: 70,
    ...                          ManagedMemoryUseCase.PYTHON: 30}
    True
    >>> consumer_weights({"taskmanager.memory.managed.consumer-weights": "DATAPROC:10"})[ManagedMemoryUseCase.OPERATOR]
    10
    """
    from streamkernel.common.options import TaskManagerMemoryOptions

    option = TaskManagerMemoryOptions.MANAGED_MEMORY_CONSUMER_WEIGHTS
    key = option.source_key(configuration)
    text = option.get(configuration)
    configured: dict[str, int] = {}
    for item in (part.strip() for part in str(text).split(",")):
        if not item:
            continue
        name, sep, value = item.partition(":")
        name = name.strip().upper()
        if not sep or name not in ("OPERATOR", "STATE_BACKEND", "PYTHON", "DATAPROC"):
            raise IllegalConfigurationError(
                f"Invalid value {text!r} for key '{key}': expected a map of consumer names (OPERATOR, "
                f"STATE_BACKEND, PYTHON) to integer weights, e.g. 'OPERATOR:70,STATE_BACKEND:70,PYTHON:30'; "
                f"{item!r} is not one")
        try:
            weight = int(value.strip())
        except ValueError:
            raise IllegalConfigurationError(
                f"Invalid value {text!r} for key '{key}': the weight of {name} must be an integer, "
                f"got {value.strip()!r}") from None
        configured[name] = weight
    weights: dict[ManagedMemoryUseCase, int] = {}
    for use_case, names in _CONSUMER_NAMES.items():
        found = next((n for n in names if n in configured), None)
        if found is None:
            continue
        weight = configured[found]
        if weight < 0:
            raise IllegalConfigurationError(
                f"Managed memory weight should not be negative. Configured weight for {use_case.value} is "
                f"{weight} (key '{key}').")
        weights[use_case] = weight
    return weights


def fraction_rounded_down(dividend: int, divisor: int) -> float:
    """``dividend / divisor`` truncated to 16 decimal places (Flink's ``getFractionRoundedDown``).

    >>> fraction_rounded_down(1, 3)
    0.3333333333333333
    """
    return float((Decimal(dividend) / Decimal(divisor)).quantize(_FRACTION_SCALE, rounding=ROUND_DOWN))


def sorted_inputs(node: Any, batch: bool) -> int:
    """How many inputs of ``node`` are sorted by key in BATCH mode: 1 for a keyed one-input
    operator, 2 for keyed ``connect``, 1 for keyed broadcast (its broadcast input passes); 0 when
    streaming or not keyed."""
    if not batch or not node.is_keyed:
        return 0
    return sum(1 for selector in node.state_key_selectors if selector is not None)


def operator_scope_weight(node: Any, configuration: Mapping[str, Any], batch: bool) -> int:
    """``node``'s ``OPERATOR`` weight: ``execution.sorted-inputs.memory`` in MiB (at least 1) when it
    sorts its inputs, else 0 (Flink's ``BatchExecutionUtils.applyBatchExecutionSettings``)."""
    from streamkernel.common.options import ExecutionOptions

    if not sorted_inputs(node, batch):
        return 0
    return max(1, ExecutionOptions.SORTED_INPUTS_MEMORY.get(configuration) >> 20)


def state_backend_uses_managed_memory(configuration: Mapping[str, Any], batch: bool) -> bool:
    """True when keyed state lives in managed memory: the RocksDB backend, unless BATCH mode's
    per-key state backend replaces it (``execution.batch-state-backend.enabled``)."""
    from streamkernel.common.options import ExecutionOptions

    if batch and ExecutionOptions.USE_BATCH_STATE_BACKEND.get(configuration):
        return False
    name = configuration.get("state.backend.type", configuration.get("state.backend", ""))
    return str(name).strip().lower() == "rocksdb"


def managed_memory_fractions(groups: Mapping[str, Iterable[Any]],
                             configuration: Mapping[str, Any]) -> dict[int, dict[ManagedMemoryUseCase, float]]:
    """Per stream node id: the fraction of its slot each of its use cases gets.

    ``groups`` maps each slot sharing group to its stream nodes. Within a group, the use cases
    declared by any of its nodes share the slot by their consumer weights (a state backend that
    keeps nothing in managed memory takes no share); an operator-scope use case is split among
    the group's operators by their weights (Flink's ``convertToFractionOfSlot``).
    """
    from streamkernel.common.options import ExecutionOptions

    batch = ExecutionOptions.RUNTIME_MODE.get(configuration) == "BATCH"
    weights = consumer_weights(configuration)
    uses_managed = state_backend_uses_managed_memory(configuration, batch)
    fractions: dict[int, dict[ManagedMemoryUseCase, float]] = {}
    for nodes in groups.values():
        members = list(nodes)
        operator_weights = {n.id: operator_scope_weight(n, configuration, batch) for n in members}
        declared = set()
        if any(operator_weights.values()):
            declared.add(ManagedMemoryUseCase.OPERATOR)
        if uses_managed and any(n.is_keyed for n in members):
            declared.add(ManagedMemoryUseCase.STATE_BACKEND)
        total = sum(weights.get(u, 0) for u in declared)
        share = {u: fraction_rounded_down(weights.get(u, 0), total) if total > 0 else 0.0 for u in declared}
        group_weight = sum(operator_weights.values())
        for node in members:
            entry: dict[ManagedMemoryUseCase, float] = {}
            if operator_weights[node.id]:
                entry[ManagedMemoryUseCase.OPERATOR] = share[ManagedMemoryUseCase.OPERATOR] \
                    * fraction_rounded_down(operator_weights[node.id], group_weight)
            if node.is_keyed:
                entry[ManagedMemoryUseCase.STATE_BACKEND] = share.get(ManagedMemoryUseCase.STATE_BACKEND, 0.0)
            if entry:
                fractions[node.id] = entry
    return fractions
