"""Setting up and tearing down a stream task's operator chain (Flink's ``OperatorChain``
construction and ``RegularOperatorChain.initializeStateAndOpenOperators`` /
``closeAllOperators``).

In the task thread, before the task reports RUNNING, the stream task
(:class:`~.stream_task.StreamTask`) asks this module for: its input gate (one channel per
input descriptor), a record writer per edge leaving the chain (each the
:class:`~.chain.RecordWriterOutput` of that edge), the :class:`~.chain.OperatorChain` itself,
then every operator set up with its context (task info, keyed state backend for keyed
operators, operator state, timer services, metrics) and its restored state, and finally
every operator's state initialised and the operators opened, successors first, as Flink
opens them. At the end the operators are closed and their keyed backends disposed.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Callable, Optional

from streamkernel.common.options import TaskManagerOptions
from streamkernel.graph.keygroups import key_group_range_for_operator
from streamkernel.graph.stream_graph import StreamEdge, StreamNode
from streamkernel.runtime.core.deployment import TaskDeploymentDescriptor
from streamkernel.runtime.operators.base import OperatorContext, StreamOperator, TaskInfo
from streamkernel.runtime.operators.batch_execution import batch_state_configuration
from streamkernel.runtime.operators.factory import create_operator
from streamkernel.runtime.tasks.chain import OperatorChain, RecordWriterOutput
from streamkernel.runtime.tasks.fusion import fuse_stateless_runs

if TYPE_CHECKING:  # pragma: no cover
    from streamkernel.runtime.tasks.stream_task import StreamTask

__all__ = ["create_input_gate", "create_operator_chain", "set_up_operators", "initialize_and_open_operators",
           "close_operators"]


def create_input_gate(tdd: TaskDeploymentDescriptor, shuffle: Any) -> Any:
    """The input gate over every input channel of ``tdd`` (None for a source task)."""
    if not tdd.inputs:
        return None
    from streamkernel.runtime.network.buffer_requirements import NetworkBufferSettings, credits_per_channel

    credits = credits_per_channel(tdd, NetworkBufferSettings.from_configuration(tdd.configuration))
    return shuffle.create_input_gate(
        tdd.name_with_subtask, [(d.channel_id, d.input_index) for d in tdd.inputs], credits)


def create_operator_chain(task: "StreamTask", on_output_watermark: Callable[[int], None]) -> OperatorChain:
    """A record writer per edge leaving the chain (appended to ``task.writers`` as they are
    created), then the chain's operators wired to each other and to those writers."""
    from streamkernel.runtime.network.record_writer import RecordWriter

    tdd = task.tdd
    shuffle = task.services.shuffle
    outputs: dict[int, RecordWriterOutput] = {}
    network_edges: list[StreamEdge] = []
    addresses = tdd.shuffle_addresses  # consumers in other TaskManager processes: their data listeners
    debloat = TaskManagerOptions.BUFFER_DEBLOAT_ENABLED.get(tdd.configuration)  # receivers announce sizes
    for descriptor in tdd.outputs:
        channels = [shuffle.output_channel(cid, addresses[cid]) if cid in addresses else shuffle.output_channel(cid)
                    for cid in descriptor.channel_ids]
        writer = RecordWriter(descriptor.stream_edge.partitioner, channels, tdd.subtask_index,
                              buffer_size=task.batch_size, metrics=task.metrics, debloat=debloat)
        task.writers.append(writer)
        outputs[id(descriptor.stream_edge)] = RecordWriterOutput(writer, on_output_watermark)
        network_edges.append(descriptor.stream_edge)
    return OperatorChain(tdd.nodes, tdd.chain_edges, network_edges, create_operator,
                         lambda edge: outputs[id(edge)], lambda node: task.metrics.operator(node.name))


def set_up_operators(task: "StreamTask", chain: OperatorChain) -> None:
    """Every operator, head first, gets its context and output; restored keyed and operator
    state go back in before ``open()``."""
    checkpointer = task.checkpointer
    for node, operator in chain.in_order():
        context = _operator_context(task, node, operator)
        checkpointer.contexts[node.id] = context
        operator.setup(context, chain.outputs[node.id])
        checkpointer.restore_before_open(node, context)


def initialize_and_open_operators(task: "StreamTask", chain: OperatorChain) -> None:
    """Initialise every operator's state, open them successors first, then restore their timers;
    finally fuse the chain's runs of stateless operators into one loop each (:mod:`.fusion`)."""
    for _, operator in chain.in_order():
        operator.initialize_state()
    for _, operator in reversed(chain.in_order()):  # successors first, as Flink opens
        operator.open()
    for node, operator in chain.in_order():
        task.checkpointer.restore_after_open(node, operator)
    fuse_stateless_runs(chain)


def _operator_context(task: "StreamTask", node: StreamNode, operator: StreamOperator) -> OperatorContext:
    from streamkernel.runtime.operators.timers import InternalTimerService
    from streamkernel.runtime.state.factory import create_keyed_backend
    from streamkernel.runtime.state.operator_state import DefaultOperatorStateBackend

    tdd = task.tdd
    services = task.services
    info = TaskInfo(tdd.job_id, tdd.job_name, tdd.job_vertex.name, tdd.subtask_index, tdd.parallelism,
                    node.max_parallelism, tdd.attempt_number, tdd.job_vertex.pyflink_name)
    keyed = None
    if node.is_keyed:
        key_groups = key_group_range_for_operator(node.max_parallelism, node.parallelism, tdd.subtask_index)
        keyed = create_keyed_backend(
            batch_state_configuration(tdd.configuration), node.max_parallelism, key_groups,
            clock=services.clock, memory_manager=getattr(services, "memory_manager", None),
            shared_resources=getattr(services, "shared_resources", None),
            memory_fraction=_state_backend_fraction(tdd.job_vertex, node.id),
            working_dir=os.path.join(services.working_dir, str(tdd.job_id),
                                     f"{tdd.job_vertex.id}-{tdd.subtask_index}-{node.id}"))
        keyed.key_type = node.state_key_type  # keys hash to key groups as key_by's partitioner hashes them
    processing_time = task.processing_time

    def timer_service(name: str, triggerable: Any) -> Any:
        service = InternalTimerService(name, keyed, triggerable, processing_time)
        operator._timer_services.append(service)
        task.metrics.timer_services.append(service)  # numFiredTimers: the task's services' sum
        return service

    metrics = task.metrics.operator(node.name)
    metrics.kind = "source" if node.is_source else "sink" if node.is_sink else ""
    restored = task.checkpointer.restored_for(node) or {}
    raw = restored.get("raw")
    if raw is None and restored.get("raw_all") is not None:
        raw = {"raw_all": restored["raw_all"]}  # parallelism changed: every old subtask's raw state
    return OperatorContext(
        task_info=info, node=node, processing_time=processing_time, timer_service=timer_service,
        operator_state=DefaultOperatorStateBackend(), metrics=metrics,
        keyed_backend=keyed, configuration=tdd.configuration, job_parameters=tdd.job_parameters,
        restored_state=raw)


def _state_backend_fraction(vertex: Any, node_id: int) -> float:
    """The fraction of the slot's managed memory ``node_id``'s keyed backend has (1.0 when the job
    graph gave its operators none)."""
    if not any(n == node_id and u == "STATE_BACKEND" for n, u, _ in vertex.managed_memory_fractions):
        return 1.0
    return vertex.managed_memory_fraction(node_id, "STATE_BACKEND")


def close_operators(chain: Optional[OperatorChain], contexts: dict[int, OperatorContext], quietly: bool) -> None:
    """Close every operator of ``chain``; after a failure (``quietly``) close errors are ignored.
    The keyed backends of ``contexts`` are disposed in any case."""
    if chain is None:
        return
    try:
        for _, operator in chain.in_order():
            try:
                operator.close()
            except BaseException:  # noqa: BLE001
                if not quietly:
                    raise
    finally:
        _dispose_keyed_backends(contexts)


def _dispose_keyed_backends(contexts: dict[int, OperatorContext]) -> None:
    """Release every operator's keyed state backend (RocksDB closes and deletes its files)."""
    for context in contexts.values():
        if context.keyed_backend is not None:
            try:
                context.keyed_backend.dispose()
            except Exception:  # noqa: BLE001 - the task is ending; a leftover directory is harmless
                pass
