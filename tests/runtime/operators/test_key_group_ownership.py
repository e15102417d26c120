"""A keyed operator refuses keys of key groups it does not own (non-deterministic key selectors).

The sender routes by the key it computes; the keyed operator computes the key again. With
``key_by(lambda x: random.random())`` the two differ, and the record would be handled (and
its state kept) by a subtask that does not own the key: Flink fails the task with "Key
group N is not in KeyGroupRange{...}", so must streamkernel.
"""

from __future__ import annotations

import random

import pytest

from streamkernel.common import Duration, Types, WatermarkStrategy
from streamkernel.common.watermark_strategy import TimestampAssigner
from streamkernel.datastream import KeyedProcessFunction, RuntimeContext, StreamExecutionEnvironment
from streamkernel.datastream.connectors.number_seq import NumberSequenceSource
from streamkernel.datastream.state import ValueStateDescriptor
from streamkernel.datastream.window import TumblingEventTimeWindows
from streamkernel.errors import JobExecutionError
from streamkernel.graph.keygroups import assign_to_key_group
from streamkernel.runtime.operators.key_group_check import OWNED_KEYS_LIMIT, KeyGroupCheck, KeyGroupOwnershipError

FLINK_TEXT = ("Unless you're directly using low level state access APIs, this is most likely caused by "
              "non-deterministic shuffle key (hashCode and equals implementation).")


def _env(parallelism: int) -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(parallelism)
    return env


def _random_key(value: int) -> float:
    return random.random()


class _Count(KeyedProcessFunction):
    def open(self, runtime_context: RuntimeContext) -> None:
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value, ctx):
        current = (self.count.value() or 0) + 1
        self.count.update(current)
        yield ctx.get_current_key(), current


class _Ts(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value * 10


def _numbers(env: StreamExecutionEnvironment, with_timestamps: bool = False):
    strategy = (WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(_Ts()) if with_timestamps
                else WatermarkStrategy.no_watermarks())
    return env.from_source(NumberSequenceSource(1, 400), strategy, "numbers")


_KEYED_JOBS = {
    "reduce": lambda env: _numbers(env).key_by(_random_key).reduce(lambda a, b: a + b).name("RandomReduce"),
    "process": lambda env: _numbers(env).key_by(_random_key).process(_Count()).name("RandomProcess"),
    "map": lambda env: _numbers(env).key_by(_random_key).map(lambda x: x).name("RandomMap"),
    "window": lambda env: (_numbers(env, with_timestamps=True).key_by(_random_key)
                           .window(TumblingEventTimeWindows.of(Duration.of_seconds(1)))
                           .reduce(lambda a, b: a + b).name("RandomWindow")),
}


@pytest.mark.parametrize("kind", sorted(_KEYED_JOBS))
def test_a_non_deterministic_key_selector_fails_the_job_with_flinks_message(kind: str) -> None:
    env = _env(2)
    _KEYED_JOBS[kind](env).add_sink(lambda v: None)
    with pytest.raises(JobExecutionError) as info:
        env.execute(f"random keys ({kind})")
    message = str(info.value)
    # 400 random keys on 2 subtasks: the chance that every one lands in its own subtask is 2**-400
    assert "is not in KeyGroupRange{startKeyGroup=" in message, message
    assert FLINK_TEXT in message, message
    assert f"Random{kind.capitalize()}" in message and "/2)" in message  # the operator and its subtask
    assert "got key 0." in message  # the key (a random float)


def test_deterministic_keyed_jobs_at_parallelism_3_are_unaffected() -> None:
    env = _env(3)
    numbers = _numbers(env, with_timestamps=True)
    counts = numbers.key_by(lambda x: f"k{x % 11}").process(_Count())
    totals = numbers.key_by(lambda x: x % 5).reduce(lambda a, b: a + b)
    windows = (numbers.key_by(lambda x: (x % 3, "w"))
               .window(TumblingEventTimeWindows.of(Duration.of_seconds(1))).reduce(lambda a, b: a + b))
    rows = list(counts.map(lambda r: ("count", r)).union(totals.map(lambda r: ("total", r)),
                                                          windows.map(lambda r: ("window", r)))
                .execute_and_collect("deterministic keys"))
    final_counts: dict = {}
    for _tag, (key, count) in (r for r in rows if r[0] == "count"):
        final_counts[key] = max(final_counts.get(key, 0), count)
    assert final_counts == {f"k{k}": sum(1 for x in range(1, 401) if x % 11 == k) for k in range(11)}
    assert max(r for tag, r in rows if tag == "total") == max(sum(range(k, 401, 5)) for k in range(1, 6))
    assert sum(r for tag, r in rows if tag == "window") == sum(range(1, 401))


def _keys_in(groups: range, count: int) -> list:
    return [k for k in range(10_000) if assign_to_key_group(k, 128) in groups][:count]


def test_the_check_remembers_owned_keys_and_names_operator_subtask_and_key() -> None:
    check = KeyGroupCheck("counts", "counts (1/2)#0", 128, range(0, 64))
    mine, theirs = _keys_in(range(0, 64), 50), _keys_in(range(64, 128), 1)[0]
    check.check(mine)
    check.check(dict.fromkeys(mine))  # a dict's keys, as the window fast path passes them
    check.check_key(mine[0])
    with pytest.raises(KeyGroupOwnershipError) as info:
        check.check(mine + [theirs])
    group = assign_to_key_group(theirs, 128)
    assert str(info.value).startswith(
        f"Key group {group} is not in KeyGroupRange{{startKeyGroup=0, endKeyGroup=63}}. {FLINK_TEXT}")
    assert f"Operator 'counts' (subtask counts (1/2)#0) got key {theirs}" in str(info.value)
    with pytest.raises(KeyGroupOwnershipError):
        check.check_new_key(theirs)


def test_unhashable_keys_are_checked_without_being_remembered() -> None:
    check = KeyGroupCheck("op", "op (2/2)#0", 128, range(64, 128))
    owned = [k for k in ([i] for i in range(1000)) if assign_to_key_group(k, 128) >= 64][:5]
    other = next(k for k in ([i] for i in range(1000)) if assign_to_key_group(k, 128) < 64)
    check.check(owned)
    check.check_key(owned[0])
    with pytest.raises(KeyGroupOwnershipError):
        check.check(owned + [other])
    with pytest.raises(KeyGroupOwnershipError):
        check.check_key(other)


def test_the_set_of_owned_keys_is_bounded() -> None:
    check = KeyGroupCheck("op", "op (1/1)#0", 128, range(0, 128))
    check.check(list(range(OWNED_KEYS_LIMIT)))
    check.check([-1, -2])
    assert len(check._owned) == 2  # cleared when full, then the new keys remembered
