"""What a task changes in BATCH execution mode: the input in front of its head, its keyed backend.

A task asks :func:`batch_input` for what its input processor feeds (the head itself, or
Flink's sorting batch input in front of it) and :func:`batch_state_configuration` for the
configuration its keyed backend is chosen from; in STREAMING mode both hand back what they
were given, so streaming pays nothing per record.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from streamkernel.runtime.operators.batch_sorting import BatchSortingInput, is_batch_mode, uses_batch_state_backend

__all__ = ["batch_input", "batch_state_configuration"]


def batch_input(head: Any, node: Any, configuration: Any, two_input: bool,
                sort_buffers: Optional[Callable[[int], Optional[list]]] = None) -> Any:
    """``head``, or in BATCH mode Flink's batch input in front of it: sorted by key for a keyed
    one-input head (:class:`~.batch_sorting.BatchSortingInput`); for a two-input head, see
    :mod:`~.batch_two_input`. ``node`` is the head's StreamNode. ``sort_buffers(n)`` opens the
    managed memory of ``n`` sorted inputs (:func:`~.external_sorter.open_sort_buffers`); None:
    the sorters are unbounded."""
    if not is_batch_mode(configuration):
        return head
    from streamkernel.graph.managed_memory import sorted_inputs

    per_key_state = uses_batch_state_backend(configuration)
    sorting = sorted_inputs(node, True)
    buffers = sort_buffers(sorting) if sort_buffers is not None and sorting else None
    if two_input:
        from streamkernel.runtime.operators.batch_two_input import batch_two_input

        return batch_two_input(head, node.state_key_selectors, node.state_key_type, per_key_state, buffers)
    if not node.is_keyed:
        return head
    return BatchSortingInput(head, node.state_key_selectors[0], node.state_key_type, per_key_state,
                             buffers[0] if buffers else None)


def batch_state_configuration(configuration: Any) -> Any:
    """The configuration the keyed backend is chosen from: in BATCH mode (unless
    ``execution.batch-state-backend.enabled`` is false) the in-memory one, whatever
    ``state.backend.type`` names (Flink's ``BatchExecutionStateBackend``: only the current key's
    state exists; ``BatchSortingInput`` drops it after each key)."""
    from streamkernel.datastream.state_backend import state_backend_from_configuration

    if not uses_batch_state_backend(configuration):
        return configuration
    state_backend_from_configuration(configuration)  # a wrong backend name is still an error
    return {k: v for k, v in configuration.items() if k not in ("state.backend.type", "state.backend")}
