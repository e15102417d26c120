"""The plan of a job, as Flink builds it: transformations -> StreamGraph -> JobGraph -> ExecutionGraph.

Each API call records a :class:`Transformation`; :func:`build_stream_graph` turns them
into the logical :class:`StreamGraph` (one node per operator, edges carrying the
partitioner); :func:`build_job_graph` chains operators into job vertices by the rules in
:mod:`~streamkernel.graph.chaining`; :func:`build_execution_graph` expands each vertex
into its parallel subtasks and places them into task slots. All three graphs are
immutable data built by pure functions; :func:`execution_plan_json` exports the
StreamGraph as Flink's execution-plan JSON.
"""

from __future__ import annotations

from streamkernel.graph.chaining import chain_breaks, is_chainable
from streamkernel.graph.execution_graph import (
    ExecutionEdge,
    ExecutionGraph,
    ExecutionVertex,
    SlotId,
    build_execution_graph,
    slots_needed,
    subtask_channels,
)
from streamkernel.graph.job_graph import JobEdge, JobGraph, JobVertex, build_job_graph
from streamkernel.graph.keygroups import (
    DEFAULT_LOWER_BOUND_MAX_PARALLELISM,
    UPPER_BOUND_MAX_PARALLELISM,
    assign_key_to_operator,
    assign_to_key_group,
    default_max_parallelism,
    key_group_range_for_operator,
    operator_index_for_key_group,
    stable_hash,
)
from streamkernel.graph.operator_specs import OperatorSpec
from streamkernel.graph.partitioners import (
    BroadcastPartitioner,
    CustomPartitionerWrapper,
    ForwardPartitioner,
    GlobalPartitioner,
    KeyGroupStreamPartitioner,
    RebalancePartitioner,
    RescalePartitioner,
    ShufflePartitioner,
    StreamPartitioner,
)
from streamkernel.graph.plan_json import execution_plan_json
from streamkernel.graph.stream_graph import StreamEdge, StreamGraph, StreamNode, build_stream_graph
from streamkernel.graph.transformations import (
    DEFAULT_SLOT_SHARING_GROUP,
    ChainingStrategy,
    OneInputTransformation,
    PartitionTransformation,
    SideOutputTransformation,
    SinkTransformation,
    SourceTransformation,
    Transformation,
    TwoInputTransformation,
    UnionTransformation,
)

__all__ = [
    # transformations
    "ChainingStrategy",
    "OperatorSpec",
    "Transformation",
    "SourceTransformation",
    "OneInputTransformation",
    "TwoInputTransformation",
    "SinkTransformation",
    "PartitionTransformation",
    "UnionTransformation",
    "SideOutputTransformation",
    "DEFAULT_SLOT_SHARING_GROUP",
    # partitioners
    "StreamPartitioner",
    "ForwardPartitioner",
    "RebalancePartitioner",
    "RescalePartitioner",
    "ShufflePartitioner",
    "BroadcastPartitioner",
    "GlobalPartitioner",
    "KeyGroupStreamPartitioner",
    "CustomPartitionerWrapper",
    # key groups
    "UPPER_BOUND_MAX_PARALLELISM",
    "DEFAULT_LOWER_BOUND_MAX_PARALLELISM",
    "default_max_parallelism",
    "stable_hash",
    "assign_to_key_group",
    "operator_index_for_key_group",
    "key_group_range_for_operator",
    "assign_key_to_operator",
    # StreamGraph
    "StreamNode",
    "StreamEdge",
    "StreamGraph",
    "build_stream_graph",
    # chaining and JobGraph
    "is_chainable",
    "chain_breaks",
    "JobVertex",
    "JobEdge",
    "JobGraph",
    "build_job_graph",
    # ExecutionGraph
    "SlotId",
    "ExecutionVertex",
    "ExecutionEdge",
    "ExecutionGraph",
    "build_execution_graph",
    "slots_needed",
    "subtask_channels",
    # execution plan JSON
    "execution_plan_json",
]
