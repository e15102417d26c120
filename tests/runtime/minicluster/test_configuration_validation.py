"""A job's configuration is checked once, at execute()/submit: the first declared key with
a value that does not fit fails at once, naming it, before any task starts; values in every
Flink notation reach the tasks typed."""

from __future__ import annotations

import re

import pytest

from streamkernel.common import Configuration
from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.errors import IllegalConfigurationError
from streamkernel.runtime.minicluster.minicluster import MiniCluster

# one wrong value per kind of option: duration, int, int range, bool, enum, double range
BAD = [
    ("metrics.latency.interval", "1 fortnight"),
    ("taskmanager.network.credits-per-channel", "four"),
    ("taskmanager.network.batch-size", "0"),
    ("execution.checkpointing.unaligned.enabled", "yes"),
    ("execution.checkpointing.mode", "EXACTLY_TWICE"),
    ("restart-strategy.exponential-delay.jitter-factor", "2.0"),
]


def _job(conf: dict, seen: list) -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment(Configuration.from_dict(conf))
    env.set_parallelism(1)
    env.from_collection([1, 2, 3]).map(lambda x: seen.append(x) or x * 10)
    return env


@pytest.mark.parametrize("key, value", BAD, ids=[k for k, _ in BAD])
def test_a_bad_value_fails_execute_at_once_naming_the_key(key: str, value: str) -> None:
    seen: list = []
    with pytest.raises(IllegalConfigurationError, match=re.escape(f"'{key}'")) as raised:
        _job({key: value}, seen).execute("bad config")  # the environment may refuse it already
    assert repr(value) in str(raised.value) and "expected" in str(raised.value)
    assert seen == []  # no task ran


@pytest.mark.parametrize("key, value", BAD[:3], ids=[k for k, _ in BAD[:3]])
def test_a_bad_value_fails_submit_to_a_running_cluster_before_a_job_exists(key: str, value: str) -> None:
    seen: list = []
    with MiniCluster(1, 1) as cluster:
        with pytest.raises(IllegalConfigurationError, match=f"key '{key}'"):
            _job({key: value}, seen).execute_async("bad config")
        assert cluster.jobs() == []  # nothing was deployed


def test_a_bad_cluster_value_fails_each_submission_naming_the_key() -> None:
    seen: list = []
    with MiniCluster(1, 1, backend="local", configuration={"web.exception-history-size": "many"}) as cluster:
        with pytest.raises(IllegalConfigurationError, match="key 'web.exception-history-size'"):
            cluster.submit(_job({}, seen).get_stream_graph("bad cluster config"))
        assert cluster.jobs() == [] and seen == []


@pytest.mark.parametrize("conf", [
    {"metrics.latency.interval": "1 s"},
    {"metrics.latency.interval": "PT0.5S", "execution.buffer-timeout.interval": "5 ms"},
    {"execution.buffer-timeout.interval": "100", "taskmanager.network.batch-size": "2",
     "taskmanager.network.credits-per-channel": "1"},
    {"execution.checkpointing.mode": "at_least_once", "pipeline.auto-watermark-interval": "1 min"},
    {"execution.buffer-timeout.enabled": "false"},
])
def test_values_in_flink_notation_run(conf: dict) -> None:
    env = _job(conf, [])
    assert sorted(env.from_collection([4, 5]).map(lambda x: x + 1).execute_and_collect(limit=10)) == [5, 6]


def test_set_buffer_timeout_minus_one_runs_with_flushing_only_when_full() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1).set_buffer_timeout(-1)
    conf = env.to_configuration_dict() if hasattr(env, "to_configuration_dict") else None
    assert conf is None or conf.get("execution.buffer-timeout.enabled") == "false"
    assert sorted(env.from_collection([1, 2, 3]).key_by(lambda x: x % 2).map(lambda x: x)
                  .execute_and_collect(limit=10)) == [1, 2, 3]
