"""StreamExecutionEnvironment: settings, configuration keys, sources and the graphs it builds."""

from __future__ import annotations

import json

import pytest

from streamkernel.common import Configuration, Duration, RestartStrategies, WatermarkStrategy
from streamkernel.datastream import (
    AsyncDataStream,
    AsyncFunction,
    CheckpointingMode,
    EmbeddedRocksDBStateBackend,
    HashMapStateBackend,
    StreamExecutionEnvironment,
)
from streamkernel.datastream.connectors.datagen import DataGeneratorSource
from streamkernel.datastream.connectors.file_system import FileSource, StreamFormat
from streamkernel.datastream.connectors.number_seq import NumberSequenceSource
from streamkernel.errors import IllegalConfigurationError, InvalidProgramError, NotEnoughSlotsError


def _env(parallelism: int = 2) -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(parallelism)
    return env


def test_each_call_gives_a_new_environment() -> None:
    assert StreamExecutionEnvironment.get_execution_environment() is not \
        StreamExecutionEnvironment.get_execution_environment()


def test_flink_2_configuration_keys_configure_the_environment() -> None:
    conf = Configuration()
    conf.set_string("parallelism.default", "3")
    conf.set_string("pipeline.max-parallelism", "64")
    conf.set_string("execution.checkpointing.interval", "5 s")
    conf.set_string("execution.checkpointing.mode", "AT_LEAST_ONCE")
    conf.set_string("state.backend.type", "rocksdb")
    conf.set_string("restart-strategy.type", "fixed-delay")
    conf.set_string("restart-strategy.fixed-delay.attempts", "4")
    conf.set_string("execution.buffer-timeout.interval", "20 ms")
    conf.set_string("pipeline.operator-chaining.enabled", "false")
    env = StreamExecutionEnvironment.get_execution_environment(conf)
    assert env.get_parallelism() == 3
    assert env.get_max_parallelism() == 64
    assert env.get_checkpoint_interval() == 5000
    assert env.get_checkpointing_mode() == CheckpointingMode.AT_LEAST_ONCE
    assert isinstance(env.get_state_backend(), EmbeddedRocksDBStateBackend)
    assert env.get_restart_strategy().to_configuration()["restart-strategy.fixed-delay.attempts"] == "4"
    assert env.get_buffer_timeout() == 20
    assert not env.is_chaining_enabled()
    snapshot = env.to_configuration_dict()
    assert snapshot["state.backend.type"] == "rocksdb"
    assert snapshot["execution.checkpointing.interval"] == "5 s"
    assert snapshot["parallelism.default"] == "3"


def test_pyflink_1x_methods_agree_with_the_keys() -> None:
    env = _env()
    env.set_restart_strategy(RestartStrategies.fixed_delay_restart(3, 1000))
    env.set_state_backend(HashMapStateBackend())
    env.enable_checkpointing(1000, CheckpointingMode.EXACTLY_ONCE)
    conf = env.to_configuration_dict()
    assert conf["restart-strategy.type"] == "fixed-delay"
    assert conf["state.backend.type"] == "hashmap"
    assert env.get_config().get_restart_strategy() is env.get_restart_strategy()


def test_bad_configuration_names_the_key() -> None:
    conf = Configuration()
    conf.set_string("pipeline.operator-chaining.enabled", "maybe")
    with pytest.raises(IllegalConfigurationError, match="pipeline.operator-chaining.enabled"):
        StreamExecutionEnvironment.get_execution_environment(conf)
    conf = Configuration()
    conf.set_string("restart-strategy.type", "sometimes")
    with pytest.raises(IllegalConfigurationError, match="fixed-delay"):
        StreamExecutionEnvironment.get_execution_environment(conf)


@pytest.mark.parametrize("bad", [0, -2, 1.5, "2", True])  # -1 is PARALLELISM_DEFAULT
def test_parallelism_must_be_a_positive_int(bad) -> None:
    with pytest.raises(InvalidProgramError, match="parallelism"):
        _env().set_parallelism(bad)


def test_max_parallelism_below_parallelism_is_refused_either_way() -> None:
    env = _env(8)
    with pytest.raises(InvalidProgramError, match="below"):
        env.set_max_parallelism(4)
    env = _env(2).set_max_parallelism(4)
    with pytest.raises(InvalidProgramError, match="exceeds"):
        env.set_parallelism(8)
    with pytest.raises(InvalidProgramError):
        env.set_max_parallelism(0)


def test_operators_take_the_parallelism_current_when_they_are_created() -> None:
    env = _env(2)
    first = env.from_source(NumberSequenceSource(1, 10), WatermarkStrategy.no_watermarks(), "seq").map(lambda x: x)
    env.set_parallelism(5)
    first.filter(bool)
    by_name = {n.name: n.parallelism for n in env.get_stream_graph().nodes}
    assert by_name == {"Source: seq": 2, "Map": 2, "Filter": 5}


def test_collection_source_is_non_parallel_and_generators_are_consumed_once() -> None:
    env = _env(4)
    stream = env.from_collection(x for x in range(3))
    node = env.get_stream_graph().nodes[0]
    assert node.parallelism == 1 and node.name == "Source: Collection Source"
    assert node.operator.source.elements == [0, 1, 2]
    assert stream.get_name() == "Collection Source"


def test_from_collection_gives_elements_as_pyflink_after_their_declared_type() -> None:
    """PyFlink sends the elements to the JVM as ``type_info`` and its functions get them back
    decoded: rows become Rows with field names (``data.info``, ``value.f1``), tuples tuples."""
    from streamkernel.common import Row, Types

    env = _env(1)
    named = env.from_collection([(1, "x")], type_info=Types.ROW_NAMED(["id", "info"], [Types.INT(), Types.STRING()]))
    row = env.get_stream_graph().nodes[0].operator.source.elements[0]
    assert isinstance(row, Row) and (row.id, row.info) == (1, "x") and row == Row(id=1, info="x")
    assert named.get_type() == Types.ROW_NAMED(["id", "info"], [Types.INT(), Types.STRING()])

    env = _env(1)
    env.from_collection([(2, "y")], type_info=Types.ROW([Types.INT(), Types.STRING()]))
    env.from_collection([[3, "z"]], type_info=Types.TUPLE([Types.INT(), Types.STRING()]))
    env.from_collection([4, 5], type_info=Types.INT())
    rows, tuples, ints = (n.operator.source.elements for n in env.get_stream_graph().nodes)
    assert rows[0].f1 == "y" and tuples == [(3, "z")] and ints == [4, 5]
    assert env.from_collection([(1, "a")]).get_type() == Types.PICKLED_BYTE_ARRAY()  # untouched without a type


def test_from_collection_rejects_a_string() -> None:
    with pytest.raises(InvalidProgramError, match="iterable of elements"):
        _env().from_collection("abc")


def test_from_source_checks_its_arguments() -> None:
    env = _env()
    with pytest.raises(InvalidProgramError, match="Source"):
        env.from_source([1, 2], WatermarkStrategy.no_watermarks(), "x")
    with pytest.raises(InvalidProgramError, match="source_name"):
        env.from_source(NumberSequenceSource(1, 2), WatermarkStrategy.no_watermarks(), "")


def test_unbounded_generator_and_monitored_files_are_unbounded_sources(tmp_path) -> None:
    env = _env()
    env.from_source(DataGeneratorSource(lambda i: i, count=None, rate_limiter_strategy=10.0),
                    WatermarkStrategy.no_watermarks(), "gen")
    monitored = FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(tmp_path)) \
        .monitor_continuously(Duration.of_seconds(1)).build()
    env.from_source(monitored, WatermarkStrategy.no_watermarks(), "files")
    env.read_text_file(str(tmp_path))
    bounded = [t.bounded for t in env.transformations]
    assert bounded == [False, False, True]


def test_graphs_and_plan_from_the_environment() -> None:
    env = _env(2)
    env.from_collection([1, 2]).map(lambda x: x).key_by(lambda x: x).reduce(lambda a, b: a + b).print()
    job = env.get_job_graph("jobby")
    assert job.job_name == "jobby"
    assert [v.name for v in job.vertices] == ["Source: Collection Source", "Map", "Reduce -> Sink: Print to Std. Out"]
    plan = json.loads(env.get_execution_plan())
    pacts = [n["pact"] for n in plan["nodes"]]
    assert pacts[0] == "Data Source" and pacts[-1] == "Data Sink"
    eg = env.get_execution_graph(taskmanagers=1, slots_per_taskmanager=2)
    assert eg.slots_needed == 2
    with pytest.raises(NotEnoughSlotsError, match="short"):
        env.get_execution_graph(taskmanagers=1, slots_per_taskmanager=1)


def test_pipeline_name_key_names_the_job() -> None:
    env = StreamExecutionEnvironment.get_execution_environment(Configuration.from_dict({"pipeline.name": "wc"}))
    env.from_collection([1]).print()
    assert env.get_stream_graph().job_name == "wc"


def test_an_empty_dataflow_cannot_be_planned() -> None:
    with pytest.raises(InvalidProgramError, match="No operators"):
        _env().get_stream_graph()


def test_duplicate_uid_is_refused_at_the_call() -> None:
    env = _env()
    env.from_collection([1]).map(lambda x: x).uid("m")
    with pytest.raises(InvalidProgramError, match="'m' is already used"):
        env.from_collection([2]).map(lambda x: x).uid("m")


class _Echo(AsyncFunction):
    async def async_invoke(self, value):
        return [value]


def test_async_data_stream_adds_an_async_wait_operator() -> None:
    env = _env()
    out = AsyncDataStream.ordered_wait(env.from_collection([1]), _Echo(), Duration.of_seconds(1), capacity=5)
    spec = out._transformation.operator
    assert spec.kind == "async_wait"
    assert spec.timeout == 1000 and spec.capacity == 5 and spec.output_mode == "ORDERED"
    with pytest.raises(InvalidProgramError, match="capacity"):
        AsyncDataStream.unordered_wait(env.from_collection([1]), _Echo(), 1000, capacity=0)


def test_the_context_configuration_of_the_process_is_the_start_of_every_environment(monkeypatch) -> None:
    from streamkernel.common import Configuration
    from streamkernel.datastream import StreamExecutionEnvironment
    from streamkernel.errors import IllegalConfigurationError

    monkeypatch.setenv("STREAMKERNEL_CONFIGURATION", '{"parallelism.default": "5", "pipeline.max-parallelism": 64}')
    env = StreamExecutionEnvironment.get_execution_environment()
    assert env.get_parallelism() == 5 and env.get_max_parallelism() == 64
    own = StreamExecutionEnvironment.get_execution_environment(Configuration.from_dict({"parallelism.default": "2"}))
    assert own.get_parallelism() == 2  # the environment's own configuration wins
    monkeypatch.setenv("STREAMKERNEL_CONFIGURATION", "parallelism=3")
    with pytest.raises(IllegalConfigurationError, match=r"\$STREAMKERNEL_CONFIGURATION: not JSON"):
        StreamExecutionEnvironment.get_execution_environment()
    monkeypatch.setenv("STREAMKERNEL_CONFIGURATION", "[1, 2]")
    with pytest.raises(IllegalConfigurationError, match="expected a JSON object"):
        StreamExecutionEnvironment.get_execution_environment()
