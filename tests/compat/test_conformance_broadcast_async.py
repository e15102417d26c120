"""PyFlink conformance: broadcast-function contexts, async I/O retries, execute_and_collect(limit).

The programs (``programs/bcast_contexts.py``, ``async_retry.py``, ``collect_limit_cancel.py``)
run as scripts; the expected output is computed here from their data following PyFlink 2.3:

- a broadcast function's ``ctx.timestamp()`` of a record without a timestamp is Java's
  ``Long.MIN_VALUE``, the watermark before any watermark is ``Long.MIN_VALUE`` too; the
  read-only broadcast state of ``process_element`` has no ``put`` (AttributeError); which
  of the two inputs goes first is not defined, so an element's view of the broadcast state
  is checked against the rules printed before it (one subtask prints in processing order);
- an async attempt is retried while the strategy's predicate accepts its result (or its
  exception) and ``can_retry(attempts so far)``; the last attempt's results are emitted,
  its exception fails the job; ``ExponentialBackoffDelayRetryStrategy`` remembers its last
  delay (PyFlink's ``get_backoff_time_millis``);
- ``execute_and_collect(limit=N)`` returns a list of the first N records and cancels the
  job (Flink's ``DataStream.executeAndCollect(limit)`` closes its iterator, which cancels
  a job still running); so does closing the iterator.
"""

from __future__ import annotations

import importlib.util
import re
import threading
from pathlib import Path

import pytest

from streamkernel.common import Time, Types, WatermarkStrategy
from streamkernel.common.job_status import JobStatus
from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.datastream.async_data_stream import AsyncDataStream
from streamkernel.datastream.async_retry_strategies import NO_RETRY_STRATEGY, FixedDelayRetryStrategy
from streamkernel.datastream.connectors.number_seq import NumberSequenceSource
from streamkernel.errors import InvalidProgramError
from streamkernel.runtime.minicluster.minicluster import MiniCluster
from streamkernel.testing import wait_until

_spec = importlib.util.spec_from_file_location(
    "compat_program_helpers", Path(__file__).with_name("test_pyflink_programs.py"))
_helpers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_helpers)
load, run, sections = _helpers.load, _helpers.run, _helpers.sections

LONG_MIN = -(2**63)
TASK_THREAD = re.compile(r"\(\d+/\d+\)")  # a subtask's thread: "Source: numbers -> Map (1/1)"


# ------------------------------------------------------------------ broadcast contexts
def _describe(state: dict) -> str:
    """What the program prints for a broadcast state holding ``state``."""
    return (f"items={sorted(state.items())} keys={sorted(state)} values={sorted(state.values())} "
            f"a={state.get('a')} has_a={'a' in state} missing=None empty={not state}")


def _times(ts: int) -> str:
    """The time part of a line; ``wm=W`` stands for the watermark checked by :func:`_watermark`."""
    return f"ts={ts} wm=W wm_before_ts={LONG_MIN < ts} now_ok=True service_wm_same=True"


def _watermark(line: str, ts: int, timestamped: bool) -> str:
    """Check the printed watermark and replace it by ``W``.

    Without timestamps no watermark ever reaches the operator before its inputs end:
    ``Long.MIN_VALUE``. With ascending timestamps the watermark (the minimum of both
    inputs', periodic) is behind the record: below its timestamp, whatever the timing.
    """
    wm = int(re.search(r" wm=(-?\d+) ", line).group(1))
    if timestamped:
        assert wm == LONG_MIN or 0 <= wm < ts, line
    else:
        assert wm == LONG_MIN, line
    return re.sub(r" wm=-?\d+ ", " wm=W ", line, count=1)


def _event_time(record: tuple) -> int:
    return record[1] * 1000  # the programs' SecondsField assigner


def _no_timestamp(record: tuple) -> int:
    return LONG_MIN


def test_broadcast_function_contexts():
    program = load("bcast_contexts.py")
    out = sections(run("bcast_contexts.py"), r"### (.+)")
    assert list(out) == program.JOBS
    states = [{}]  # the broadcast state after 0, 1, ... rules
    for key, value in program.RULES:
        states.append({**states[-1], key: value})
    for job, lines in out.items():
        timestamped, keyed = job.endswith("with timestamps"), job.startswith("keyed")
        ts_of = _event_time if timestamped else _no_timestamp
        main = [line[len("main "):] for line in lines if line.startswith("main ")]
        side = [line[len("side "):] for line in lines if line.startswith("side ")]
        assert len(main) + len(side) == len(lines), lines
        # each input in its order; the interleaving of the two inputs is whatever ran
        kinds = [line.split(" ", 1)[0] for line in main]
        assert sorted(kinds) == sorted(["element"] * len(program.ORDERS) + ["rule"] * len(program.RULES)), main
        elements, rules = iter(program.ORDERS), iter(program.RULES)
        seen_rules = 0
        expected = []
        for kind in kinds:
            if kind == "rule":
                rule = next(rules)
                seen_rules += 1
                expected.append(f"rule {rule} {_times(ts_of(rule))} {_describe(states[seen_rules])}")
            else:
                order = next(elements)
                key = f" key={order[0]}" if keyed else ""
                expected.append(f"element {order}{key} {_times(ts_of(order))} {_describe(states[seen_rules])} "
                                f"put=AttributeError")
        records = [program.ORDERS[kinds[:i].count("element")] if kind == "element"
                   else program.RULES[kinds[:i].count("rule")] for i, kind in enumerate(kinds)]
        assert [_watermark(line, ts_of(record), timestamped) for line, record in zip(main, records)] == expected, job
        assert sorted(side) == sorted([f"element {o}" for o in program.ORDERS] + [f"rule {r}" for r in program.RULES])


# ------------------------------------------------------------------ async retries
def _attempt(program, value: int, n: int):
    """The ``n``-th attempt of ``Flaky.async_invoke(value)``: its results, or ValueError."""
    if value % 4 == 0 and n <= 2:
        return ValueError
    if value % 4 == 1 and n <= 1:
        return []
    if value == program.ALWAYS_RETRIED:
        return [f"retry {value} attempt {n}"]
    return [f"{value} attempt {n}", f"{value} second"]


def _with_retries(program, value: int, max_attempts: int, retry_exceptions: bool):
    """PyFlink's RetryableResultHandler: retry while the predicate asks and ``n <= max_attempts``."""
    n = 0
    while True:
        n += 1
        outcome = _attempt(program, value, n)
        if outcome is ValueError:
            wanted = retry_exceptions
        else:
            wanted = program.needs_retry(outcome)
        if not (wanted and n <= max_attempts):
            return outcome


def _job_output(program, max_attempts: int, retry_exceptions: bool, ordered: bool) -> list[str]:
    outcomes = [_with_retries(program, v, max_attempts, retry_exceptions) for v in program.VALUES]
    if ValueError in outcomes:
        return ["failed: ValueError boom reported=True"]
    lines = [line for outcome in outcomes for line in outcome]
    return lines if ordered else sorted(lines)


def _exponential_backoffs(initial: int, max_delay: int, multiplier: float, calls) -> list[int]:
    """PyFlink's ExponentialBackoffDelayRetryStrategy: the last delay times the multiplier."""
    last, delays = initial, []
    for attempts in calls:
        last = initial if attempts <= 1 else int(min(last * multiplier, max_delay))
        delays.append(last)
    return delays


def test_async_retries():
    program = load("async_retry.py")
    out = sections(run("async_retry.py"), r"### (.+)")
    assert out["strategies"] == [
        f"backoff {_exponential_backoffs(3, 40, 1.5, program.BACKOFF_CALLS)}",
        f"can retry {[n <= 5 for n in range(7)]}",
        f"fixed FixedDelayRetryStrategy {[7, 7, 7]} {[n <= 2 for n in range(4)]}",
        "no retry True False -1 None",
        "rejected (0, 1, None, None)",
        "rejected (1, 0, None, None)",
    ]
    assert out["ordered fixed delay"] == _job_output(program, 3, True, ordered=True)
    assert out["unordered exponential backoff"] == _job_output(program, 3, True, ordered=False)
    assert out["retries exhausted"] == _job_output(program, 1, True, ordered=True) == [
        "failed: ValueError boom reported=True"]
    assert out["exceptions not retried"] == _job_output(program, 3, False, ordered=False)
    assert out["timeout fallback"] == [f"timeout {program.HANGING} after 1 attempts"]
    assert out["no timeout without retries"] == [line for v in (2, 3, 6) for line in _attempt(program, v, 1)]


# ------------------------------------------------------------------ execute_and_collect(limit)
def test_collect_with_limit_on_an_endless_source_ends_the_program():
    """The program ends (an uncancelled endless job would keep it running) with the records."""
    program = load("collect_limit_cancel.py")
    lines = run("collect_limit_cancel.py")
    assert lines == [
        f"limit: True {[n * 2 for n in range(program.LIMIT)]}",
        "iterator: CloseableIterator",
        f"with: {[n for n in range(3 * program.TAKEN) if n % 3 == 0]}",
        f"more than there are: {program.AFTERWARDS}",
        f"to the end: {[s.upper() for s in program.AFTERWARDS]}",
        "then StopIteration",
    ]


def _endless(env: StreamExecutionEnvironment):
    return env.from_source(NumberSequenceSource(0, 10**12), WatermarkStrategy.no_watermarks(), "numbers")


def _task_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if TASK_THREAD.search(t.name)]


def test_limit_and_early_close_cancel_the_job_and_leave_no_task_thread():
    with MiniCluster(1, 2) as cluster:
        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(2)
        first = _endless(env).map(lambda n: n + 1, output_type=Types.LONG()).execute_and_collect("limited", limit=3)
        assert isinstance(first, list) and len(first) == 3
        with _endless(env).execute_and_collect("closed early") as results:
            next(results)
        assert [(job.name, job.status) for job in cluster.jobs()] == [
            ("limited", JobStatus.CANCELED), ("closed early", JobStatus.CANCELED)]
        wait_until(lambda: not _task_threads(), message="task threads still running after the cancel")
        # the environment runs the next job
        assert sorted(env.from_collection([3, 1, 2]).execute_and_collect("after", limit=5)) == [1, 2, 3]
        assert cluster.jobs()[-1].status is JobStatus.FINISHED


def test_limit_on_a_transient_cluster_leaves_no_thread():
    before = set(threading.enumerate())
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    assert _endless(env).execute_and_collect(limit=2) == [0, 1]
    assert set(threading.enumerate()) - before == set()


def test_with_retry_checks_its_arguments_at_once():
    """PyFlink's AsyncDataStream._validate: a strategy is required, retries need a timeout;
    without retries a timeout of 0 means none."""
    program = load("async_retry.py")
    env = StreamExecutionEnvironment.get_execution_environment()
    ds = env.from_collection([1])
    fixed = FixedDelayRetryStrategy(2, 5, program.needs_retry, None)
    with pytest.raises(InvalidProgramError, match=r"ordered_wait_with_retry\(\): async_retry_strategy should not be None"):
        AsyncDataStream.ordered_wait_with_retry(ds, program.Flaky(), Time.seconds(1), None)
    with pytest.raises(InvalidProgramError, match=r"unordered_wait_with_retry\(\): a timeout must be configured"):
        AsyncDataStream.unordered_wait_with_retry(ds, program.Flaky(), Time.seconds(0), fixed)
    with pytest.raises(InvalidProgramError, match="timeout must be positive"):
        AsyncDataStream.ordered_wait(ds, program.Flaky(), -1)
    with pytest.raises(InvalidProgramError, match="max_attempts should be greater than zero, got 0"):
        FixedDelayRetryStrategy(0, 5, None, None)
    # no retries: no timeout needed, as in PyFlink
    AsyncDataStream.ordered_wait_with_retry(ds, program.Flaky(), Time.seconds(0), NO_RETRY_STRATEGY)
    AsyncDataStream.unordered_wait(ds, program.Flaky(), Time.seconds(0))
