"""User-defined functions of the DataStream API, as PyFlink's ``pyflink.datastream.functions``.

Every interface a PyFlink program subclasses lives here under its PyFlink name. The
definitions are split by concept:

* :mod:`~streamkernel.datastream.function_base` - Function, RuntimeContext and the
  record-at-a-time interfaces (MapFunction, FlatMapFunction, FilterFunction, KeySelector,
  ReduceFunction, AggregateFunction, Partitioner, CoMapFunction, CoFlatMapFunction);
* :mod:`~streamkernel.datastream.function_process` - ProcessFunction,
  KeyedProcessFunction, the co-process and broadcast process functions;
* :mod:`~streamkernel.datastream.function_window` - window functions;
* :mod:`~streamkernel.datastream.function_async` - async I/O interfaces;
* :mod:`~streamkernel.datastream.function_wrappers` - plain callables as Functions.

Example::

    from streamkernel.datastream.functions import MapFunction

    class Double(MapFunction):
        def map(self, value):
            return value * 2

    ds.map(Double())          # or, the same: ds.map(lambda v: v * 2)
"""

from __future__ import annotations

from typing import Any

from streamkernel.datastream.function_async import (
    AsyncFunction,
    AsyncFunctionDescriptor,
    AsyncRetryPredicate,
    AsyncRetryStrategy,
)
from streamkernel.datastream.function_base import (
    AggregateFunction,
    CoFlatMapFunction,
    CoMapFunction,
    FilterFunction,
    FlatMapFunction,
    Function,
    KeyedStateStore,
    KeySelector,
    MapFunction,
    NullByteKeySelector,
    Partitioner,
    ReduceFunction,
    RuntimeContext,
    SinkFunction,
    SourceFunction,
)
from streamkernel.datastream.function_process import (
    BaseBroadcastProcessFunction,
    BroadcastProcessFunction,
    CoProcessFunction,
    KeyedBroadcastProcessFunction,
    KeyedCoProcessFunction,
    KeyedProcessFunction,
    ProcessFunction,
)
from streamkernel.datastream.function_window import (
    AllWindowFunction,
    InternalIterableAllWindowFunction,
    InternalIterableProcessAllWindowFunction,
    InternalIterableProcessWindowFunction,
    InternalIterableWindowFunction,
    InternalSingleValueAllWindowFunction,
    InternalSingleValueProcessAllWindowFunction,
    InternalSingleValueProcessWindowFunction,
    InternalSingleValueWindowFunction,
    InternalWindowFunction,
    PassThroughAllWindowFunction,
    PassThroughWindowFunction,
    ProcessAllWindowFunction,
    ProcessWindowFunction,
    WindowFunction,
)
from streamkernel.datastream.function_wrappers import FunctionWrapper, ReduceFunctionWrapper

__all__ = [
    "Function",
    "RuntimeContext",
    "KeyedStateStore",
    "MapFunction",
    "CoMapFunction",
    "FlatMapFunction",
    "CoFlatMapFunction",
    "ReduceFunction",
    "AggregateFunction",
    "KeySelector",
    "NullByteKeySelector",
    "FilterFunction",
    "Partitioner",
    "SourceFunction",
    "SinkFunction",
    "ProcessFunction",
    "CoProcessFunction",
    "KeyedProcessFunction",
    "KeyedCoProcessFunction",
    "TimerService",
    "WindowFunction",
    "AllWindowFunction",
    "ProcessWindowFunction",
    "ProcessAllWindowFunction",
    "PassThroughWindowFunction",
    "PassThroughAllWindowFunction",
    "InternalWindowFunction",
    "InternalSingleValueWindowFunction",
    "InternalSingleValueAllWindowFunction",
    "InternalIterableWindowFunction",
    "InternalIterableAllWindowFunction",
    "InternalSingleValueProcessWindowFunction",
    "InternalSingleValueProcessAllWindowFunction",
    "InternalIterableProcessWindowFunction",
    "InternalIterableProcessAllWindowFunction",
    "BaseBroadcastProcessFunction",
    "BroadcastProcessFunction",
    "KeyedBroadcastProcessFunction",
    "AsyncFunction",
    "AsyncFunctionDescriptor",
    "AsyncRetryPredicate",
    "AsyncRetryStrategy",
    "FunctionWrapper",
    "ReduceFunctionWrapper",
]


def __getattr__(name: str) -> Any:
    # TimerService is re-exported as PyFlink does; imported on first use so that this
    # module does not depend on the timer service module at import time.
    if name == "TimerService":
        from streamkernel.datastream.timerservice import TimerService

        return TimerService
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
