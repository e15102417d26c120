"""ConnectedStreams, BroadcastStream and BroadcastConnectedStream: two-input operators."""

from __future__ import annotations

import pytest

from streamkernel.common.typeinfo import Types
from streamkernel.datastream.data_stream import (
    BroadcastConnectedStream,
    BroadcastStream,
    ConnectedStreams,
    KeyedStream,
)
from streamkernel.datastream.functions import (
    BroadcastProcessFunction,
    CoFlatMapFunction,
    CoMapFunction,
    CoProcessFunction,
    KeyedBroadcastProcessFunction,
    KeyedCoProcessFunction,
)
from streamkernel.datastream.state import MapStateDescriptor
from streamkernel.datastream.stream_execution_environment import StreamExecutionEnvironment
from streamkernel.errors import InvalidFunctionError, InvalidProgramError
from streamkernel.graph.stream_graph import build_stream_graph
from streamkernel.graph.transformations import TwoInputTransformation


def _streams(parallelism: int = 2):
    env = StreamExecutionEnvironment.get_execution_environment().set_parallelism(parallelism)
    return env, env.from_collection([1, 2, 3]).map(int), env.from_collection(["a", "b"]).map(str)


class Both(CoMapFunction):
    def map1(self, value):
        return value

    def map2(self, value):
        return len(value)


class BothFlat(CoFlatMapFunction):
    def flat_map1(self, value):
        yield value

    def flat_map2(self, value):
        yield from value


class CoProc(CoProcessFunction):
    def process_element1(self, value, ctx):
        yield value

    def process_element2(self, value, ctx):
        yield value


class KeyedCoProc(KeyedCoProcessFunction):
    def process_element1(self, value, ctx):
        yield ctx.get_current_key()

    def process_element2(self, value, ctx):
        yield ctx.get_current_key()


class Rules(BroadcastProcessFunction):
    def process_element(self, value, ctx):
        yield value

    def process_broadcast_element(self, value, ctx):
        ctx.get_broadcast_state(RULES).put(value, value)


class KeyedRules(KeyedBroadcastProcessFunction):
    def process_element(self, value, ctx):
        yield value

    def process_broadcast_element(self, value, ctx):
        yield value


RULES = MapStateDescriptor("rules", Types.STRING(), Types.STRING())


def test_co_map_and_co_flat_map_build_two_input_operators_keeping_input_order() -> None:
    _, numbers, letters = _streams(3)
    connected = numbers.connect(letters)
    assert isinstance(connected, ConnectedStreams)
    for result, name, kind in ((connected.map(Both(), Types.INT()), "Co-Map", "co_map"),
                               (connected.flat_map(BothFlat()), "Co-Flat Map", "co_flat_map"),
                               (connected.process(CoProc()), "Co-Process", "co_process")):
        t = result._transformation
        assert isinstance(t, TwoInputTransformation)
        assert (t.name, t.operator.kind, t.parallelism) == (name, kind, 3)
        assert t.inputs == (numbers._transformation, letters._transformation)
        assert (t.state_key_selector1, t.state_key_selector2) == (None, None)
        graph = build_stream_graph([t])
        edges = sorted(graph.in_edges(t.id), key=lambda e: e.type_number)
        assert [(e.source_id, e.type_number) for e in edges] == [
            (numbers._transformation.id, 1), (letters._transformation.id, 2)]


def test_co_functions_are_required_as_in_pyflink() -> None:
    _, numbers, letters = _streams()
    connected = numbers.connect(letters)
    with pytest.raises(InvalidFunctionError, match="expects a CoMapFunction, got function"):
        connected.map(lambda v: v)
    with pytest.raises(InvalidFunctionError, match="CoFlatMapFunction"):
        connected.flat_map(Both())
    with pytest.raises(InvalidFunctionError, match="CoProcessFunction or KeyedCoProcessFunction"):
        connected.process(Both())
    with pytest.raises(InvalidFunctionError, match="needs both inputs keyed"):
        connected.process(KeyedCoProc())


def test_keyed_connected_streams_make_keyed_operators() -> None:
    _, numbers, letters = _streams()
    keyed = numbers.connect(letters).key_by(lambda n: n % 2, lambda s: len(s) % 2)
    assert isinstance(keyed.stream1, KeyedStream) and isinstance(keyed.stream2, KeyedStream)
    result = keyed.process(KeyedCoProc())
    t = result._transformation
    assert (t.name, t.operator.kind) == ("Keyed Co-Process", "keyed_co_process")
    assert t.state_key_selector1.get_key(3) == 1 and t.state_key_selector2.get_key("ab") == 0
    assert t.operator.key_selector1 is t.state_key_selector1
    graph = build_stream_graph([t])
    assert {e.label for e in graph.in_edges(t.id)} == {"HASH"} and graph.node(t.id).is_keyed
    co_map = keyed.map(Both())._transformation
    assert co_map.operator.kind == "co_map" and co_map.state_key_selector2 is not None
    # re-keying keyed connected streams starts from the original streams
    rekeyed = keyed.key_by(lambda n: n, lambda s: s)
    assert rekeyed.stream1._transformation.inputs == (numbers._transformation,)


def test_connect_checks_environment_and_argument() -> None:
    _, numbers, _ = _streams()
    _, other, _ = _streams()
    with pytest.raises(InvalidProgramError, match="different StreamExecutionEnvironments"):
        numbers.connect(other)
    with pytest.raises(InvalidProgramError, match="DataStream or a BroadcastStream"):
        numbers.connect([1, 2])


def test_broadcast_state_pattern() -> None:
    _, events, rules = _streams(2)
    broadcast = rules.broadcast(RULES)
    assert isinstance(broadcast, BroadcastStream) and broadcast.broadcast_state_descriptors == [RULES]
    connected = events.connect(broadcast)
    assert isinstance(connected, BroadcastConnectedStream)
    result = connected.process(Rules(), Types.INT())
    t = result._transformation
    assert (t.name, t.operator.kind) == ("Co-Process-Broadcast", "broadcast_process")
    assert t.operator.broadcast_state_descriptors == (RULES,)
    assert t.inputs[0] is events._transformation
    graph = build_stream_graph([t])
    labels = {e.type_number: e.label for e in graph.in_edges(t.id)}
    assert labels == {1: "FORWARD", 2: "BROADCAST"}

    keyed = events.key_by(lambda v: v).connect(broadcast).process(KeyedRules())._transformation
    assert (keyed.name, keyed.operator.kind) == ("Keyed-Co-Process-Broadcast", "keyed_broadcast_process")
    assert keyed.state_key_selector1 is keyed.operator.key_selector
    assert keyed.state_key_selector1.get_key(5) == 5


def test_broadcast_functions_must_match_keyedness() -> None:
    _, events, rules = _streams()
    broadcast = rules.broadcast(RULES)
    with pytest.raises(InvalidFunctionError, match="non-keyed"):
        events.key_by(lambda v: v).connect(broadcast).process(Rules())
    with pytest.raises(InvalidFunctionError, match="keyed DataStream"):
        events.connect(broadcast).process(KeyedRules())
    with pytest.raises(InvalidFunctionError, match="BroadcastProcessFunction"):
        events.connect(broadcast).process(lambda v, ctx: v)
    with pytest.raises(InvalidProgramError, match="MapStateDescriptor"):
        rules.broadcast("rules")
