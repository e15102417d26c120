"""The scheduler's pure part: ExecutionGraph + allocated slots -> task deployment descriptors.

Two functions, no I/O:

* :func:`assign_slots` maps the ExecutionGraph's logical slots (the graph is built for one
  TaskManager holding exactly ``slots_needed`` slots, so logical slot *k* is
  ``SlotId(0, k)``) onto the real slots the ResourceManager allocated, in order.
* :func:`build_deployment_descriptors` writes one TaskDeploymentDescriptor per subtask:
  the chain's operators, and for every JobEdge the channels between producer and consumer
  subtasks, as :func:`~streamkernel.graph.execution_graph.subtask_channels` connects them.

Channel wiring, per job edge ``e`` (its index in ``job_graph.edges``):

* producer subtask *u*: one :class:`OutputDescriptor` whose ``channel_ids`` are its
  targets in target order. For an all-to-all edge (HASH, REBALANCE, SHUFFLE, BROADCAST,
  GLOBAL, CUSTOM) that is every downstream subtask, so channel *i* goes to subtask *i*
  and a partitioner's channel index is the target subtask. For a pointwise edge
  (FORWARD, RESCALE) only the few subtasks *u* is connected to.
* consumer subtask *d*: one :class:`InputChannelDescriptor` per producer connected to it,
  by edge then producer index, with ``input_index`` 0 (1 for the second input of a
  two-input operator: ``type_number - 1``).

Shuffle addresses (TaskManagers in other processes): given where every subtask runs
(``placement``: subtask -> TaskManager id) and each TaskManager's data-listener address
(``data_addresses``; None for a TaskManager of this process), an output channel whose
consumer runs in *another* TaskManager that has an address gets that address in the
producer's ``shuffle_addresses`` (:func:`shuffle_addresses`); the producing task connects
to it. Channels between subtasks of one TaskManager stay in-process.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from streamkernel.common.execution_config import ExecutionConfig
from streamkernel.graph.execution_graph import ExecutionGraph, subtask_channels
from streamkernel.graph.job_graph import JobGraph
from streamkernel.runtime.core.deployment import (
    ChannelId,
    InputChannelDescriptor,
    OutputDescriptor,
    TaskDeploymentDescriptor,
)
from streamkernel.runtime.taskmanager.gateway import AllocatedSlot

__all__ = ["SubtaskKey", "assign_slots", "build_deployment_descriptors", "deployment_order", "shuffle_addresses"]

#: A subtask, as the scheduler names it: (job vertex id, subtask index).
SubtaskKey = tuple[int, int]

#: A TCP address: (host, port).
Address = tuple[str, int]


def assign_slots(execution_graph: ExecutionGraph,
                 allocated: Sequence[AllocatedSlot]) -> dict[SubtaskKey, AllocatedSlot]:
    """Place every subtask into a real slot: logical slot *k* of the graph -> ``allocated[k]``.

    With slot sharing, subtask *i* of every vertex of a sharing group lands in the same slot,
    as the ExecutionGraph placed them. Raises ValueError if fewer slots were allocated than
    the graph uses.
    """
    logical = sorted({v.slot for v in execution_graph.vertices if v.slot is not None})
    if len(allocated) < len(logical):
        raise ValueError(f"job {execution_graph.job_graph.job_name!r} needs {len(logical)} slots, "
                         f"{len(allocated)} were allocated")
    real = {slot: allocated[k] for k, slot in enumerate(logical)}
    return {(v.job_vertex_id, v.subtask_index): real[v.slot] for v in execution_graph.vertices
            if v.slot is not None}


def deployment_order(job_graph: JobGraph) -> list[SubtaskKey]:
    """Every subtask, consumers before producers (reverse topological order of the vertices).

    Deploying sinks first means a source's first buffers find their reader's gate ready.
    """
    return [(v.id, i) for v in reversed(job_graph.vertices) for i in range(v.parallelism)]


def shuffle_addresses(outputs: Sequence[OutputDescriptor], producer_taskmanager: Optional[str],
                      placement: Mapping[SubtaskKey, str], consumer_vertex: Mapping[int, int],
                      data_addresses: Mapping[str, Optional[Address]]) -> dict[ChannelId, Address]:
    """The remote output channels of one producer subtask: channel -> its consumer TaskManager's address.

    ``consumer_vertex`` maps a job edge index to its target vertex id; a channel is remote
    when its consumer subtask is placed on a TaskManager other than ``producer_taskmanager``
    that has a data address. Unplaced subtasks and TaskManagers without an address
    (in this process) give in-process channels.
    """
    result: dict[ChannelId, Address] = {}
    for output in outputs:
        for channel in output.channel_ids:
            consumer = placement.get((consumer_vertex[channel.edge_index], channel.target_subtask))
            if consumer is None or consumer == producer_taskmanager:
                continue
            address = data_addresses.get(consumer)
            if address is not None:
                result[channel] = (str(address[0]), int(address[1]))
    return result


def build_deployment_descriptors(job_id: str, job_graph: JobGraph, *, attempt_number: int = 0,
                                 configuration: Optional[Mapping[str, Any]] = None,
                                 placement: Optional[Mapping[SubtaskKey, str]] = None,
                                 data_addresses: Optional[Mapping[str, Optional[Address]]] = None,
                                 ) -> dict[SubtaskKey, TaskDeploymentDescriptor]:
    """One TaskDeploymentDescriptor per subtask of ``job_graph``, keyed by (vertex id, subtask).

    ``attempt_number`` is the job's attempt (0, then +1 per restart): it goes into every
    ChannelId so that the channels of a restarted job never mix with the old ones.
    ``configuration`` (str -> str) is shipped to every task; the global job parameters are
    read from it (``pipeline.global-job-parameters``). ``placement`` (subtask -> TaskManager
    id) and ``data_addresses`` (TaskManager id -> its data listener, None in this process)
    fill each descriptor's ``shuffle_addresses`` (:func:`shuffle_addresses`); without them
    every channel is in-process.
    """
    conf = {k: str(v) for k, v in (configuration or job_graph.stream_graph.configuration).items()}
    job_parameters = ExecutionConfig(conf).get_global_job_parameters()
    stream_graph = job_graph.stream_graph
    network_edges = {id(je.stream_edge) for je in job_graph.edges}

    outputs: dict[SubtaskKey, list[OutputDescriptor]] = {}
    inputs: dict[SubtaskKey, list[InputChannelDescriptor]] = {}
    for edge_index, je in enumerate(job_graph.edges):
        p_up = job_graph.vertex(je.source_vertex_id).parallelism
        p_down = job_graph.vertex(je.target_vertex_id).parallelism
        pairs = subtask_channels(je.partitioner, p_up, p_down)
        type_number = je.stream_edge.type_number
        input_index = type_number - 1 if type_number in (1, 2) else 0
        targets: dict[int, list[ChannelId]] = {u: [] for u in range(p_up)}
        for u, d in pairs:  # sorted by (u, d): targets come in target order
            channel = ChannelId(job_id, edge_index, u, d, attempt_number)
            targets[u].append(channel)
            inputs.setdefault((je.target_vertex_id, d), []).append(InputChannelDescriptor(channel, input_index))
        for u, channels in targets.items():
            outputs.setdefault((je.source_vertex_id, u), []).append(OutputDescriptor(je.stream_edge, tuple(channels)))

    consumer_vertex = {edge_index: je.target_vertex_id for edge_index, je in enumerate(job_graph.edges)}
    placed = placement or {}
    addresses = data_addresses or {}
    descriptors: dict[SubtaskKey, TaskDeploymentDescriptor] = {}
    for vertex in job_graph.vertices:
        members = set(vertex.operator_ids)
        nodes = job_graph.operators(vertex.id)
        chain_edges = tuple(e for e in stream_graph.edges
                            if e.source_id in members and e.target_id in members and id(e) not in network_edges)
        for index in range(vertex.parallelism):
            key = (vertex.id, index)
            remote = shuffle_addresses(outputs.get(key, ()), placed.get(key), placed, consumer_vertex, addresses) \
                if addresses else {}
            descriptors[key] = TaskDeploymentDescriptor(
                job_id=job_id, job_name=job_graph.job_name, job_vertex=vertex, nodes=nodes,
                chain_edges=chain_edges, subtask_index=index, inputs=tuple(inputs.get(key, ())),
                outputs=tuple(outputs.get(key, ())), attempt_number=attempt_number, configuration=conf,
                job_parameters=job_parameters, shuffle_addresses=remote)
    return descriptors
