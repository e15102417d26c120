"""Misuse checks beyond what PyFlink checks at the same call, and what the conformance program
cannot show: the error classes, the checks that must not refuse a valid program, and Flink's
message fragments of errors PyFlink only reports at execute()."""

from __future__ import annotations

import pytest

from streamkernel.common.typeinfo import Types
from streamkernel.datastream.data_stream import DataStream
from streamkernel.datastream.functions import ProcessFunction
from streamkernel.datastream.output_tag import OutputTag
from streamkernel.datastream.state import ListStateDescriptor, MapStateDescriptor, ValueStateDescriptor
from streamkernel.datastream.stream_execution_environment import StreamExecutionEnvironment
from streamkernel.datastream.window import TumblingEventTimeWindows
from streamkernel.errors import InvalidArgumentTypeError, InvalidProgramError, NoSuchOperationError
from streamkernel.common import Time


class _Forward(ProcessFunction):
    def process_element(self, value, ctx):
        yield value


def _env(parallelism: int = 2) -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(parallelism)
    return env


def test_the_new_error_classes_are_program_errors_and_pyflinks_builtins() -> None:
    assert issubclass(InvalidArgumentTypeError, InvalidProgramError) and issubclass(InvalidArgumentTypeError, TypeError)
    assert issubclass(NoSuchOperationError, InvalidProgramError) and issubclass(NoSuchOperationError, AttributeError)


def test_window_on_a_datastream_is_an_attribute_error_with_the_fix_and_keyed_window_still_works() -> None:
    ds = _env().from_collection([("a", 1)])
    with pytest.raises(AttributeError, match=r"'DataStream' object has no attribute 'window': .*key_by\(\.\.\.\) "
                                             r"first, or use window_all\(\)"):
        ds.window(TumblingEventTimeWindows.of(Time.seconds(1)))
    with pytest.raises(InvalidProgramError):  # streamkernel's own class still catches it
        ds.map(str).window(TumblingEventTimeWindows.of(Time.seconds(1)))
    assert not hasattr(DataStream, "window") and not hasattr(ds.rebalance(), "window")
    keyed = ds.key_by(lambda v: v[0])
    assert type(keyed.window(TumblingEventTimeWindows.of(Time.seconds(1)))).__name__ == "WindowedStream"


@pytest.mark.parametrize("make", [
    lambda: ValueStateDescriptor("v", 5),
    lambda: ValueStateDescriptor("v", Types.INT),  # forgot the parentheses
    lambda: ListStateDescriptor("l", "int"),
    lambda: MapStateDescriptor("m", Types.STRING(), 5),
    lambda: ValueStateDescriptor(5, Types.INT()),
    lambda: ValueStateDescriptor("v", Types.INT()).enable_time_to_live(10),
])
def test_state_descriptors_refuse_arguments_of_the_wrong_type_at_once(make) -> None:
    # PyFlink fails later, at get_state (the JVM has no such type); streamkernel at the call.
    with pytest.raises(TypeError, match=r"StateDescriptor"):
        make()


def test_state_descriptors_name_the_argument_and_hint_at_missing_parentheses() -> None:
    with pytest.raises(InvalidArgumentTypeError, match=r"MapStateDescriptor\('m'\): value_type_info must be a "
                                                       r"TypeInformation .*got int: 5"):
        MapStateDescriptor("m", Types.STRING(), 5)
    with pytest.raises(InvalidArgumentTypeError, match="did you forget the parentheses"):
        ValueStateDescriptor("v", Types.INT)
    assert MapStateDescriptor("m", Types.STRING(), Types.LONG()).value_type_info == Types.LONG()
    assert ValueStateDescriptor("v").type_info is None  # untyped (pickled) state stays allowed


def test_union_accepts_streams_of_one_type_typed_untyped_or_keyed() -> None:
    env = _env()
    untyped = env.from_collection([1]).union(env.from_collection([2]), env.from_collection([3]).map(str))
    assert untyped.get_type() == Types.PICKLED_BYTE_ARRAY()
    ints = env.from_collection([1], Types.INT())
    keyed = env.from_collection([2], Types.INT()).key_by(lambda v: v)
    assert ints.union(keyed, ints.filter(bool)).get_type() == Types.INT()
    # a declared PICKLED_BYTE_ARRAY is the undeclared type
    env.from_collection([1]).union(env.from_collection([2]).map(str, output_type=Types.PICKLED_BYTE_ARRAY()))


def test_union_names_both_types_and_the_fix() -> None:
    env = _env()
    rows = env.from_collection([(1, "a")], Types.ROW([Types.INT(), Types.STRING()]))
    with pytest.raises(InvalidProgramError, match=r"Cannot union streams of different types: Integer and "
                                                  r"RowTypeInfo\(.*\)\. union\(\) needs the same element type"):
        env.from_collection([1], Types.INT()).union(env.from_collection([2], Types.INT()), rows)


def test_side_outputs_of_one_id_need_one_type_per_operator() -> None:
    env = _env()
    processed = env.from_collection([1]).process(_Forward())
    processed.get_side_output(OutputTag("side"))
    processed.get_side_output(OutputTag("side", Types.PICKLED_BYTE_ARRAY()))  # the same type as untyped
    processed.get_side_output(OutputTag("other", Types.INT()))
    env.from_collection([1]).process(_Forward()).get_side_output(OutputTag("side", Types.INT()))  # another operator
    with pytest.raises(InvalidProgramError, match=r"already requested with a different type.*Operator 'PROCESS': "
                                                  r"OutputTag\('side'\) was requested as PickledByteArrayTypeInfo "
                                                  r"and now as Integer"):
        processed.get_side_output(OutputTag("side", Types.INT()))
    with pytest.raises(TypeError, match=r"get_side_output\(\) expects an OutputTag"):
        processed.get_side_output("side")


def test_an_output_tag_name_of_another_type_is_a_type_error() -> None:
    with pytest.raises(InvalidArgumentTypeError, match=r"tag_id must be a non-empty str, got int: 5"):
        OutputTag(5)


def test_parallelism_default_gives_the_environments_parallelism() -> None:
    env = _env(3)
    mapped = env.from_collection([1]).map(str).set_parallelism(5).set_parallelism(-1)
    assert mapped._transformation.parallelism == 3
    assert not mapped._transformation.parallelism_configured
    assert env.set_parallelism(-1).get_parallelism() == env._default_local_parallelism
    with pytest.raises(InvalidProgramError, match="The parallelism of non parallel operator must be 1"):
        env.from_collection([1]).map(str).force_non_parallel().set_parallelism(-1)


def test_flinks_execute_time_messages_come_at_the_call() -> None:
    # PyFlink reports these only when the job is submitted (JobMaster start); streamkernel at the call,
    # with Flink's text first.
    env = _env(1)
    mapped = env.from_collection([1]).map(str).name("parse").set_max_parallelism(2)
    with pytest.raises(InvalidProgramError, match=r"^Vertex parse's parallelism \(3\) is higher than the max "
                                                  r"parallelism \(2\)\. Please lower the parallelism"):
        mapped.set_parallelism(3)
    mapped.uid("same")
    with pytest.raises(InvalidProgramError, match=r'^Hash collision on user-specified ID "same"\. Most likely '
                                                  r"cause is a non-unique ID\. uid 'same' is already used by "
                                                  r"operator 'parse'"):
        env.from_collection([2]).map(str).uid("same")


@pytest.mark.parametrize("call", [
    lambda ds: ds.set_parallelism("2"),
    lambda ds: ds.set_max_parallelism(2.0),
    lambda ds: ds.set_buffer_timeout("10"),
])
def test_operator_settings_of_the_wrong_type_are_type_errors(call) -> None:
    ds = _env().from_collection([1]).map(str)
    with pytest.raises(InvalidArgumentTypeError, match="on operator 'Map'"):
        call(ds)


def test_environment_parallelism_of_the_wrong_type_is_a_type_error() -> None:
    with pytest.raises(InvalidArgumentTypeError, match=r"set_parallelism: parallelism must be an int .*got str"):
        _env().set_parallelism("2")
