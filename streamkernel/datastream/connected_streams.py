"""Two-input streams: ConnectedStreams (``a.connect(b)``) and the broadcast state pattern.

A two-input operator reads both inputs and tells them apart (``map1``/``map2``,
``process_element1``/``process_element2``); one instance sees both, so the inputs can
share state - e.g. rules on one input applied to events on the other. When both inputs
are keyed (``a.connect(b).key_by(k1, k2)``), the operator is keyed and its state is per key.

With ``rules.broadcast(descriptor)`` every subtask receives every rule (a BROADCAST edge)
and keeps it in broadcast state; ``events.connect(broadcast_stream).process(f)`` then
applies a (Keyed)BroadcastProcessFunction.
"""

from __future__ import annotations

from typing import Any, List, Optional, Union

from streamkernel.datastream.data_stream import DataStream, normalize_output_type
from streamkernel.datastream.function_base import CoFlatMapFunction, CoMapFunction, KeySelector
from streamkernel.datastream.function_process import (
    BroadcastProcessFunction,
    CoProcessFunction,
    KeyedBroadcastProcessFunction,
    KeyedCoProcessFunction,
)
from streamkernel.datastream.function_wrappers import require_function
from streamkernel.datastream.keyed_stream import KeyedStream
from streamkernel.datastream.operator_specs import broadcast_spec, two_input_spec
from streamkernel.errors import InvalidFunctionError, InvalidProgramError
from streamkernel.graph.operator_specs import OperatorSpec
from streamkernel.graph.transformations import TwoInputTransformation

__all__ = ["ConnectedStreams", "BroadcastStream", "BroadcastConnectedStream"]


def _two_input(name: str, first: DataStream, second: DataStream, spec: OperatorSpec, output_type: Any,
               key_selector1: Optional[KeySelector] = None,
               key_selector2: Optional[KeySelector] = None) -> DataStream:
    env = first._env
    key_type = getattr(first, "_key_type", None) if key_selector1 is not None else None
    if key_selector1 is not None and key_selector2 is not None and key_type != getattr(second, "_key_type", None):
        # Flink: the two inputs' keys must be of one type (keys hash to key groups by their type)
        raise InvalidProgramError(
            f"{name}: key types of the input KeyedStreams don't match: {_key_type_name(key_type)} and "
            f"{_key_type_name(getattr(second, '_key_type', None))} (key_by's key_type must be the same for both)")
    t = TwoInputTransformation(name, first._transformation, second._transformation, spec, env.get_parallelism(),
                               state_key_selector1=key_selector1, state_key_selector2=key_selector2,
                               output_type=output_type, state_key_type=key_type)
    env._add(t)
    return DataStream(t, env)


def _key_type_name(key_type: Any) -> str:
    """How Flink names a key_by's key type (none given: pickled keys)."""
    return "PickledByteArrayTypeInfo" if key_type is None else repr(key_type)


class ConnectedStreams:
    """Two streams, possibly of different types, processed together by one co-function."""

    def __init__(self, stream1: DataStream, stream2: DataStream) -> None:
        self.stream1 = stream1
        self.stream2 = stream2

    def __repr__(self) -> str:
        return f"ConnectedStreams({self.stream1!r}, {self.stream2!r})"

    def _is_keyed_stream(self) -> bool:
        return isinstance(self.stream1, KeyedStream) and isinstance(self.stream2, KeyedStream)

    def _key_selectors(self) -> tuple[Optional[KeySelector], Optional[KeySelector]]:
        if self._is_keyed_stream():
            return self.stream1._key_selector(), self.stream2._key_selector()
        return None, None

    def key_by(self, key_selector1: Any, key_selector2: Any, key_type: Any = None) -> "ConnectedStreams":
        """Keys both inputs (same key type): the co-function then keeps state per key."""
        ds1 = self.stream1._origin_stream if isinstance(self.stream1, KeyedStream) else self.stream1
        ds2 = self.stream2._origin_stream if isinstance(self.stream2, KeyedStream) else self.stream2
        return ConnectedStreams(ds1.key_by(key_selector1, key_type), ds2.key_by(key_selector2, key_type))

    def map(self, func: CoMapFunction, output_type: Any = None) -> DataStream:
        """One result per element of either input: ``map1`` for the first, ``map2`` for the second."""
        require_function(func, CoMapFunction, "map() on ConnectedStreams")
        ks1, ks2 = self._key_selectors()
        return _two_input("Co-Map", self.stream1, self.stream2, two_input_spec("co_map", func, ks1, ks2),
                          normalize_output_type(output_type, "map()"), ks1, ks2)

    def flat_map(self, func: CoFlatMapFunction, output_type: Any = None) -> DataStream:
        """Zero or more results per element: ``flat_map1`` / ``flat_map2``."""
        require_function(func, CoFlatMapFunction, "flat_map() on ConnectedStreams")
        ks1, ks2 = self._key_selectors()
        return _two_input("Co-Flat Map", self.stream1, self.stream2, two_input_spec("co_flat_map", func, ks1, ks2),
                          normalize_output_type(output_type, "flat_map()"), ks1, ks2)

    def process(self, func: Union[CoProcessFunction, KeyedCoProcessFunction], output_type: Any = None) -> DataStream:
        """Applies a CoProcessFunction, or a KeyedCoProcessFunction when both inputs are keyed."""
        require_function(func, (CoProcessFunction, KeyedCoProcessFunction), "process() on ConnectedStreams")
        ks1, ks2 = self._key_selectors()
        if self._is_keyed_stream():
            name, kind = "Keyed Co-Process", "keyed_co_process"
        elif isinstance(func, KeyedCoProcessFunction):
            raise InvalidFunctionError(
                "process() with a KeyedCoProcessFunction needs both inputs keyed: call "
                "connect(...).key_by(key_selector1, key_selector2) first, or use a CoProcessFunction")
        else:
            name, kind = "Co-Process", "co_process"
        return _two_input(name, self.stream1, self.stream2, two_input_spec(kind, func, ks1, ks2),
                          normalize_output_type(output_type, "process()"), ks1, ks2)


class BroadcastStream:
    """A stream broadcast to every subtask, with broadcast state (``ds.broadcast(descriptor)``).

    Its only use is ``other.connect(broadcast_stream)``.
    """

    def __init__(self, input_stream: DataStream, broadcast_state_descriptors: List[Any]) -> None:
        self.input_stream = input_stream
        self.broadcast_state_descriptors = broadcast_state_descriptors

    def __repr__(self) -> str:
        names = [d.get_name() for d in self.broadcast_state_descriptors]
        return f"BroadcastStream({self.input_stream!r}, states={names})"


class BroadcastConnectedStream:
    """A (keyed or non-keyed) stream connected with a BroadcastStream: the broadcast state pattern."""

    def __init__(self, non_broadcast_stream: DataStream, broadcast_stream: BroadcastStream,
                 broadcast_state_descriptors: List[Any]) -> None:
        self.non_broadcast_stream = non_broadcast_stream
        self.broadcast_stream = broadcast_stream
        self.broadcast_state_descriptors = broadcast_state_descriptors

    def _is_keyed_stream(self) -> bool:
        return isinstance(self.non_broadcast_stream, KeyedStream)

    def process(self, func: Union[BroadcastProcessFunction, KeyedBroadcastProcessFunction],
                output_type: Any = None) -> DataStream:
        """Applies a BroadcastProcessFunction (non-keyed side) or a KeyedBroadcastProcessFunction
        (keyed side); the broadcast side is the operator's second input."""
        require_function(func, (BroadcastProcessFunction, KeyedBroadcastProcessFunction),
                         "process() on a BroadcastConnectedStream")
        keyed = self._is_keyed_stream()
        if isinstance(func, BroadcastProcessFunction) and keyed:
            raise InvalidFunctionError(
                "BroadcastProcessFunction should be applied to a non-keyed DataStream; use a "
                "KeyedBroadcastProcessFunction on a KeyedStream")
        if isinstance(func, KeyedBroadcastProcessFunction) and not keyed:
            raise InvalidFunctionError(
                "KeyedBroadcastProcessFunction should be applied to a keyed DataStream: call key_by(...) on the "
                "non-broadcast stream first, or use a BroadcastProcessFunction")
        ks = self.non_broadcast_stream._key_selector() if keyed else None
        name = "Keyed-Co-Process-Broadcast" if keyed else "Co-Process-Broadcast"
        return _two_input(name, self.non_broadcast_stream, self.broadcast_stream.input_stream,
                          broadcast_spec(func, self.broadcast_state_descriptors, ks),
                          normalize_output_type(output_type, "process()"), ks, None)
