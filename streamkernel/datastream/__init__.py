"""``streamkernel.datastream``: PyFlink's ``pyflink.datastream`` for streamkernel.

The same names in the same places, so a PyFlink DataStream program runs by changing its
import prefix: ``from streamkernel.datastream import StreamExecutionEnvironment``.

>>> from streamkernel.datastream import StreamExecutionEnvironment
>>> env = StreamExecutionEnvironment.get_execution_environment()
>>> env.from_collection([1, 2, 3]).map(lambda x: x * 2).get_name()
'Map'
"""

from streamkernel.datastream.async_data_stream import AsyncDataStream
from streamkernel.datastream.checkpoint_config import CheckpointConfig
from streamkernel.datastream.checkpoint_storage import (
    CheckpointStorage,
    CustomCheckpointStorage,
    FileSystemCheckpointStorage,
    JobManagerCheckpointStorage,
)
from streamkernel.datastream.checkpointing_mode import CheckpointingMode
from streamkernel.datastream.data_stream import (
    AllWindowedStream,
    BroadcastConnectedStream,
    BroadcastStream,
    CloseableIterator,
    ConnectedStreams,
    DataStream,
    DataStreamSink,
    KeyedStream,
    WindowedStream,
)
from streamkernel.datastream.execution_mode import RuntimeExecutionMode
from streamkernel.datastream.externalized_checkpoint_retention import ExternalizedCheckpointRetention
from streamkernel.datastream.functions import (
    AggregateFunction,
    AllWindowFunction,
    AsyncFunction,
    AsyncRetryPredicate,
    AsyncRetryStrategy,
    BroadcastProcessFunction,
    CoFlatMapFunction,
    CoMapFunction,
    CoProcessFunction,
    FilterFunction,
    FlatMapFunction,
    KeyedBroadcastProcessFunction,
    KeyedCoProcessFunction,
    KeyedProcessFunction,
    KeySelector,
    MapFunction,
    Partitioner,
    ProcessAllWindowFunction,
    ProcessFunction,
    ProcessWindowFunction,
    ReduceFunction,
    RuntimeContext,
    SinkFunction,
    SourceFunction,
    WindowFunction,
)
from streamkernel.datastream.memory_size import MemorySize
from streamkernel.datastream.output_tag import OutputTag
from streamkernel.datastream.slot_sharing_group import SlotSharingGroup
from streamkernel.datastream.state_backend import (
    CustomStateBackend,
    EmbeddedRocksDBStateBackend,
    HashMapStateBackend,
    PredefinedOptions,
    StateBackend,
)
from streamkernel.datastream.stream_execution_environment import StreamExecutionEnvironment
from streamkernel.datastream.time_domain import TimeDomain
from streamkernel.datastream.timerservice import TimerService
from streamkernel.datastream.window import (
    CountWindow,
    GlobalWindow,
    MergingWindowAssigner,
    TimeWindow,
    Trigger,
    TriggerResult,
    Window,
    WindowAssigner,
)

__all__ = [
    "AggregateFunction", "AllWindowFunction", "AsyncDataStream", "AllWindowedStream", "AsyncFunction", "AsyncRetryPredicate",
    "AsyncRetryStrategy", "BroadcastConnectedStream", "BroadcastProcessFunction", "BroadcastStream",
    "CheckpointConfig", "CheckpointStorage", "CheckpointingMode", "CloseableIterator", "CoFlatMapFunction",
    "CoMapFunction", "CoProcessFunction", "ConnectedStreams", "CountWindow", "CustomCheckpointStorage",
    "CustomStateBackend", "DataStream", "DataStreamSink", "EmbeddedRocksDBStateBackend",
    "ExternalizedCheckpointRetention", "FileSystemCheckpointStorage", "FilterFunction", "FlatMapFunction",
    "GlobalWindow", "HashMapStateBackend", "JobManagerCheckpointStorage", "KeySelector",
    "KeyedBroadcastProcessFunction", "KeyedCoProcessFunction", "KeyedProcessFunction", "KeyedStream",
    "MapFunction", "MemorySize", "MergingWindowAssigner", "OutputTag", "Partitioner", "PredefinedOptions",
    "ProcessAllWindowFunction", "ProcessFunction", "ProcessWindowFunction", "ReduceFunction", "RuntimeContext",
    "RuntimeExecutionMode", "SinkFunction", "SlotSharingGroup", "SourceFunction", "StateBackend",
    "StreamExecutionEnvironment", "TimeDomain", "TimeWindow", "TimerService", "Trigger", "TriggerResult",
    "Window", "WindowAssigner", "WindowFunction", "WindowedStream",
]
