"""DataStream: a stream of elements, and every operation that makes a new one (PyFlink's API).

Each call records one :class:`~streamkernel.graph.transformations.Transformation` in the
stream's environment (``env._add``) and returns the stream it produces; nothing runs
until ``env.execute()`` (or :meth:`DataStream.execute_and_collect`). Operators take the
environment's parallelism when they are created, as in Flink. What each operator carries
for the runtime is listed in :mod:`streamkernel.datastream.operator_specs`.

This module also exposes every other stream class under its PyFlink module path
(``from streamkernel.datastream.data_stream import KeyedStream`` works); they live in
``keyed_stream``, ``windowed_stream`` and ``connected_streams``.

Example::

    env = StreamExecutionEnvironment.get_execution_environment()
    ds = env.from_collection([("a", 1), ("b", 2), ("a", 3)])
    ds.key_by(lambda v: v[0]).sum(1).print()
    env.execute("word count")
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional, Union

from streamkernel.datastream.argument_checks import (
    KeyedOnlyMethod,
    check_projectable,
    check_side_output_tag,
    check_union_types,
    require_argument_type,
)
from streamkernel.datastream.closeable_iterator import CloseableIterator, CollectedRecords
from streamkernel.datastream.function_base import (
    FilterFunction,
    FlatMapFunction,
    Function,
    KeySelector,
    MapFunction,
    Partitioner,
)
from streamkernel.datastream.function_process import KeyedProcessFunction, ProcessFunction
from streamkernel.datastream.function_wrappers import as_function, require_function
from streamkernel.datastream.operator_specs import one_input_spec, sink_spec, timestamps_watermarks_spec
from streamkernel.datastream.stream_operator import OperatorSettings
from streamkernel.errors import InvalidArgumentTypeError, InvalidFunctionError, InvalidProgramError
from streamkernel.graph.partitioners import (
    BroadcastPartitioner,
    CustomPartitionerWrapper,
    ForwardPartitioner,
    KeyGroupStreamPartitioner,
    RebalancePartitioner,
    RescalePartitioner,
    ShufflePartitioner,
    StreamPartitioner,
)
from streamkernel.graph.operator_specs import OperatorSpec
from streamkernel.graph.transformations import (
    OneInputTransformation,
    PartitionTransformation,
    SideOutputTransformation,
    SinkTransformation,
    Transformation,
    UnionTransformation,
)

if TYPE_CHECKING:  # pragma: no cover - typing only
    from streamkernel.datastream.connected_streams import BroadcastConnectedStream, BroadcastStream, ConnectedStreams
    from streamkernel.datastream.keyed_stream import KeyedStream
    from streamkernel.datastream.windowed_stream import AllWindowedStream

__all__ = [
    "DataStream",
    "KeyedStream",
    "WindowedStream",
    "AllWindowedStream",
    "ConnectedStreams",
    "BroadcastStream",
    "BroadcastConnectedStream",
    "DataStreamSink",
    "CloseableIterator",
]


def normalize_output_type(output_type: Any, call: str) -> Any:
    """None, a TypeInformation, or a list of field types (a Row type, as PyFlink allows)."""
    if output_type is None:
        return None
    from streamkernel.common.typeinfo import TypeInformation, Types

    if isinstance(output_type, list):
        return Types.ROW(output_type)
    require_argument_type(output_type, TypeInformation, call, "output_type",
                          "None, list or TypeInformation (e.g. Types.INT() or a list of them)")
    return output_type


def type_of(t: Transformation) -> Any:
    """The element type of a transformation's output; virtual ones pass their input's type on."""
    while t.output_type is None and not t.is_physical and t.inputs and not isinstance(t, SideOutputTransformation):
        t = t.inputs[0]
    return t.output_type


class DataStream(OperatorSettings):
    """A stream of elements of the same type, produced by one operator (or a partitioning of it).

    Transform it with ``map``, ``filter``, ``flat_map``, ``process``; partition it with
    ``key_by``, ``rebalance``, ``broadcast`` ...; end it with ``print``, ``sink_to`` or
    ``execute_and_collect``.
    """

    def __init__(self, transformation: Transformation, env: Any) -> None:
        self._transformation = transformation
        self._env = env

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._transformation.name!r})"

    # ------------------------------------------------------------------ facts
    def get_type(self) -> Any:
        """The TypeInformation of the elements (PICKLED_BYTE_ARRAY when none was declared)."""
        found = type_of(self._transformation)
        if found is None:
            from streamkernel.common.typeinfo import Types

            return Types.PICKLED_BYTE_ARRAY()
        return found

    def get_execution_environment(self) -> Any:
        """The StreamExecutionEnvironment this stream belongs to."""
        return self._env

    def get_execution_config(self) -> Any:
        """The ExecutionConfig of this stream's environment."""
        return self._env.get_config()

    # ------------------------------------------------------- internal builders
    def _key_selector(self) -> Optional[KeySelector]:
        """The KeySelector of a keyed stream (None here): makes its operators keyed."""
        return None

    def _check_env(self, other: Any, call: str) -> None:
        if other._env is not self._env:
            raise InvalidProgramError(
                f"{call}: the streams belong to different StreamExecutionEnvironments; all streams of "
                f"a job must come from the same environment")

    def _one_input(self, name: str, spec: OperatorSpec, output_type: Any, *,
                   parallelism: Optional[int] = None, keyed: bool = True) -> "DataStream":
        """A new operator reading this stream (keyed when this is a KeyedStream and ``keyed``)."""
        t = OneInputTransformation(
            name, self._transformation, spec,
            self._env.get_parallelism() if parallelism is None else parallelism,
            state_key_selector=self._key_selector() if keyed else None, output_type=output_type,
            state_key_type=getattr(self, "_key_type", None) if keyed else None)
        self._env._add(t)
        return DataStream(t, self._env)

    def _partition(self, partitioner: StreamPartitioner) -> "DataStream":
        t = PartitionTransformation(self._transformation, partitioner)
        self._env._add(t)
        return DataStream(t, self._env)

    def _sink(self, name: str, sink: Any) -> "DataStreamSink":
        t = SinkTransformation(name, self._transformation, sink_spec(sink, type_of(self._transformation)),
                               self._env.get_parallelism())
        self._env._add(t)
        return DataStreamSink(t, self._env)

    # ------------------------------------------------------------ operators
    def map(self, func: Union[Callable[[Any], Any], MapFunction], output_type: Any = None) -> "DataStream":
        """One result per element: ``ds.map(lambda v: v * 2)`` or a MapFunction."""
        f = as_function(func, MapFunction, "map()")
        return self._one_input("Map", one_input_spec("map", f, self._key_selector()),
                               normalize_output_type(output_type, "map()"))

    def flat_map(self, func: Union[Callable[[Any], Iterable[Any]], FlatMapFunction],
                 output_type: Any = None) -> "DataStream":
        """Zero or more results per element: the callable returns (or yields) an iterable."""
        f = as_function(func, FlatMapFunction, "flat_map()")
        return self._one_input("FlatMap", one_input_spec("flat_map", f, self._key_selector()),
                               normalize_output_type(output_type, "flat_map()"))

    def filter(self, func: Union[Callable[[Any], bool], FilterFunction]) -> "DataStream":
        """Keeps the elements for which the predicate is true."""
        f = as_function(func, FilterFunction, "filter()")
        return self._one_input("Filter", one_input_spec("filter", f, self._key_selector()),
                               type_of(self._transformation))

    def process(self, func: ProcessFunction, output_type: Any = None) -> "DataStream":
        """Applies a ProcessFunction (``yield`` results, side outputs, timestamps)."""
        if isinstance(func, KeyedProcessFunction):
            raise InvalidFunctionError(
                "process() on a non-keyed DataStream expects a ProcessFunction, got a KeyedProcessFunction: "
                "call key_by(...) first to use keyed state and timers")
        require_function(func, ProcessFunction, "process()")
        return self._one_input("PROCESS", one_input_spec("process", func),
                               normalize_output_type(output_type, "process()"))

    def project(self, *field_indexes: int) -> "DataStream":
        """Keeps the given fields of tuple elements, in that order, as a tuple.

        On a ``Types.TUPLE`` stream the result is typed as the tuple of the kept fields, as
        Flink's projection is."""
        if not field_indexes or not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0
                                        for i in field_indexes):
            raise InvalidProgramError(
                f"project() needs one or more field indexes (ints >= 0), got {field_indexes!r}")
        from streamkernel.common.typeinfo import TupleTypeInfo, Types

        input_type = type_of(self._transformation)
        check_projectable(input_type, field_indexes)
        output_type = None
        if isinstance(input_type, TupleTypeInfo):
            field_types = input_type.get_field_types()
            if max(field_indexes) >= len(field_types):
                raise InvalidProgramError(
                    f"project(): field index {max(field_indexes)} is out of range for {input_type!r}")
            output_type = Types.TUPLE([field_types[i] for i in field_indexes])
        return self._one_input("Projection", one_input_spec("map", _Projection(field_indexes), self._key_selector()),
                               output_type)

    def assign_timestamps_and_watermarks(self, watermark_strategy: Any) -> "DataStream":
        """Assigns event timestamps and emits watermarks by ``watermark_strategy``.

        The operator takes its input's parallelism, so it chains to the source.
        """
        from streamkernel.common.watermark_strategy import WatermarkStrategy

        if not isinstance(watermark_strategy, WatermarkStrategy):
            raise InvalidProgramError(
                f"assign_timestamps_and_watermarks() expects a WatermarkStrategy (e.g. "
                f"WatermarkStrategy.for_monotonous_timestamps()), got {watermark_strategy!r}")
        return self._one_input("Timestamps/Watermarks", timestamps_watermarks_spec(watermark_strategy),
                               type_of(self._transformation), parallelism=self._transformation.parallelism,
                               keyed=False)

    # ---------------------------------------------------------- partitioning
    def key_by(self, key_selector: Union[Callable[[Any], Any], KeySelector], key_type: Any = None) -> "KeyedStream":
        """Partitions the stream by key: the result's operators keep state per key."""
        from streamkernel.datastream.keyed_stream import KeyedStream

        ks = as_function(key_selector, KeySelector, "key_by()", "key_selector")
        t = PartitionTransformation(self._transformation, KeyGroupStreamPartitioner(key_selector=ks, key_type=key_type))
        self._env._add(t)
        return KeyedStream(t, self._env, ks, key_type, self)

    def forward(self) -> "DataStream":
        """Each subtask sends to the subtask of the same index (needs equal parallelism)."""
        return self._partition(ForwardPartitioner())

    def rebalance(self) -> "DataStream":
        """Round-robin over all subtasks of the next operator."""
        return self._partition(RebalancePartitioner())

    def rescale(self) -> "DataStream":
        """Round-robin over a local subset of the next operator's subtasks."""
        return self._partition(RescalePartitioner())

    def shuffle(self) -> "DataStream":
        """Each element to a uniformly random subtask of the next operator."""
        return self._partition(ShufflePartitioner())

    def broadcast(self, *broadcast_state_descriptors: Any) -> Union["DataStream", "BroadcastStream"]:
        """Every element to every subtask of the next operator.

        With MapStateDescriptors, returns a BroadcastStream to ``connect`` to another stream
        (the broadcast state pattern).
        """
        if not broadcast_state_descriptors:
            return self._partition(BroadcastPartitioner())
        from streamkernel.datastream.connected_streams import BroadcastStream
        from streamkernel.datastream.state import MapStateDescriptor

        for d in broadcast_state_descriptors:
            require_argument_type(d, MapStateDescriptor, "broadcast()", "broadcast_state_descriptor",
                                  "MapStateDescriptor")
        return BroadcastStream(self._partition(BroadcastPartitioner()), list(broadcast_state_descriptors))

    def partition_custom(self, partitioner: Union[Callable[[Any, int], int], Partitioner],
                         key_selector: Union[Callable[[Any], Any], KeySelector]) -> "DataStream":
        """Sends each element to ``partitioner.partition(key_selector(element), num_partitions)``."""
        p = as_function(partitioner, Partitioner, "partition_custom()", "partitioner")
        ks = as_function(key_selector, KeySelector, "partition_custom()", "key_selector")
        return self._partition(CustomPartitionerWrapper(partitioner=p, key_selector=ks))

    def union(self, *streams: "DataStream") -> "DataStream":
        """One stream of the elements of this stream and ``streams``."""
        for s in streams:
            require_argument_type(s, DataStream, "union()", "each stream", "a DataStream")
            self._check_env(s, "union()")
        check_union_types(type_of(self._transformation), [type_of(s._transformation) for s in streams])
        t = UnionTransformation([self._transformation] + [s._transformation for s in streams])
        self._env._add(t)
        return DataStream(t, self._env)

    def connect(self, ds: Union["DataStream", "BroadcastStream"]) -> Union["ConnectedStreams",
                                                                            "BroadcastConnectedStream"]:
        """ConnectedStreams with ``ds`` (for co-functions), or a BroadcastConnectedStream."""
        from streamkernel.datastream.connected_streams import (
            BroadcastConnectedStream,
            BroadcastStream,
            ConnectedStreams,
        )

        if isinstance(ds, BroadcastStream):
            self._check_env(ds.input_stream, "connect()")
            return BroadcastConnectedStream(self, ds, ds.broadcast_state_descriptors)
        require_argument_type(ds, DataStream, "connect()", "ds", "a DataStream or a BroadcastStream")
        self._check_env(ds, "connect()")
        return ConnectedStreams(self, ds)

    # --------------------------------------------------------------- windows
    def window_all(self, window_assigner: Any) -> "AllWindowedStream":
        """Windows over the whole (non-keyed) stream; its operator runs in one subtask."""
        from streamkernel.datastream.windowed_stream import AllWindowedStream

        return AllWindowedStream(self, window_assigner)

    #: Not on a non-keyed stream (an AttributeError, as in PyFlink): windows need a KeyedStream.
    window: Any = KeyedOnlyMethod(
        "needs a KeyedStream: call key_by(...) first, or use window_all() for a non-keyed window")

    def get_side_output(self, output_tag: Any) -> "DataStream":
        """The elements this operator emitted to the side output ``output_tag``."""
        t = self._operator("get_side_output()")
        if not hasattr(output_tag, "tag_id"):
            raise InvalidArgumentTypeError(f"get_side_output() expects an OutputTag, got {output_tag!r}")
        check_side_output_tag(self._env.transformations, t, output_tag)
        side = SideOutputTransformation(t, output_tag)
        self._env._add(side)
        return DataStream(side, self._env)

    # ----------------------------------------------------------------- sinks
    def print(self, sink_identifier: Optional[str] = None) -> "DataStreamSink":
        """Writes each element to stdout (prefixed with the subtask, and the identifier if given)."""
        from streamkernel.datastream.connectors.print_sink import PrintSink

        return self._sink("Print to Std. Out", PrintSink(sink_identifier))

    def add_sink(self, sink_func: Any) -> "DataStreamSink":
        """Writes the stream to a SinkFunction (a plain callable is called once per element)."""
        from streamkernel.datastream.connectors.base import Sink, SinkFunction

        if not isinstance(sink_func, Sink):
            if not callable(sink_func) or isinstance(sink_func, (type, Function)):
                raise InvalidFunctionError(f"add_sink() expects a SinkFunction or a callable, got {sink_func!r}")
            sink_func = SinkFunction(sink_func)
        return self._sink("Unnamed", sink_func)

    def sink_to(self, sink: Any) -> "DataStreamSink":
        """Writes the stream to a Sink (e.g. a FileSink)."""
        from streamkernel.datastream.connectors.base import Sink
        from streamkernel.datastream.connectors.print_sink import PrintSink

        if not isinstance(sink, (Sink, PrintSink)):
            raise InvalidProgramError(f"sink_to() expects a Sink, got {sink!r}")
        return self._sink(getattr(sink, "default_name", None) or type(sink).__name__, sink)

    def execute_and_collect(self, job_execution_name: Optional[str] = None,
                            limit: Optional[int] = None) -> Union["CloseableIterator", list]:
        """Runs the job and returns this stream's elements: an iterator, or a list of at most
        ``limit`` elements. Close the iterator (or use ``with``) to stop the job early."""
        if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit <= 0):
            raise InvalidProgramError(f"execute_and_collect(limit={limit!r}): limit must be an int > 0")
        result = self._env._execute_and_collect(self, job_execution_name, limit)
        if limit is None:
            return result
        if isinstance(result, list):
            return CollectedRecords(result)
        try:
            return CollectedRecords(itertools.islice(result, limit))
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()

    def cache(self) -> "DataStream":
        """Not supported: caching needs BATCH execution; streamkernel runs streaming jobs."""
        raise InvalidProgramError(
            "cache() is only supported for bounded streams in BATCH execution mode, which streamkernel does "
            "not run; keep the stream and reuse it within one job instead")


class _Projection(MapFunction):
    """The MapFunction behind ``project``: a tuple of the selected fields."""

    def __init__(self, field_indexes: tuple[int, ...]) -> None:
        self.field_indexes = field_indexes

    def map(self, value: Any) -> Any:
        return tuple(value[i] for i in self.field_indexes)


class DataStreamSink(OperatorSettings):
    """The end of a stream written to a sink: name, uid, parallelism ... of the sink operator."""

    def __init__(self, transformation: Transformation, env: Any) -> None:
        self._transformation = transformation
        self._env = env

    def __repr__(self) -> str:
        return f"DataStreamSink({self._transformation.name!r})"


_REEXPORTS = {
    "KeyedStream": "streamkernel.datastream.keyed_stream",
    "WindowedStream": "streamkernel.datastream.windowed_stream",
    "AllWindowedStream": "streamkernel.datastream.windowed_stream",
    "ConnectedStreams": "streamkernel.datastream.connected_streams",
    "BroadcastStream": "streamkernel.datastream.connected_streams",
    "BroadcastConnectedStream": "streamkernel.datastream.connected_streams",
}


def __getattr__(name: str) -> Any:
    # The other stream classes subclass or return DataStream, so they import this module;
    # they are re-exported lazily here to keep that import one-way.
    module = _REEXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
