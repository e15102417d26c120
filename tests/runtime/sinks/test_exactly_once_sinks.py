"""Exactly-once (two-phase commit) sinks: FileSink, the collect sink and PandasSink.

The tests play the Task's part by hand with the operator harness: write, ``snapshot_state``
(a checkpoint), maybe ``notify_checkpoint_complete`` (the checkpoint completed; the
notification may also be lost), fail (drop the operator without finishing), restore a new
operator from the last *completed* checkpoint's state while the "sources" replay the
records after it, ... until the input ends. The committed output must equal a run without
failures: no duplicates, no gaps. Without checkpointing (and with at-least-once
checkpoints) duplicates are possible, and the tests say so.
"""

from __future__ import annotations

import pathlib
import random
import re
from typing import Any, Callable, Optional

import operator_harness as harness  # tests/runtime/operator_harness.py (on sys.path: conftest.py)
import pytest

from streamkernel.common import Configuration, WatermarkStrategy
from streamkernel.common.serialization import Encoder
from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.datastream.connectors import CollectSink, CsvSink, FileSink, PandasSink, RollingPolicy
from streamkernel.errors import InvalidProgramError
from streamkernel.graph.operator_specs import SinkSpec
from streamkernel.runtime.sinks.transactions import SinkTransactions
from streamkernel.testing import Fail, Pause, ScriptedSource

CHECKPOINTING = {"execution.checkpointing.interval": "1 s"}


def sink_harness(sink: Any, **kwargs: Any) -> Any:
    return harness.OperatorHarness(SinkSpec(sink=sink), name="Sink: test", **kwargs)


def file_sink(path: pathlib.Path, part_size: int = 12) -> FileSink:
    return (FileSink.for_row_format(str(path), Encoder.simple_string_encoder())
            .with_rolling_policy(RollingPolicy.default_rolling_policy(part_size=part_size)).build())


UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
PART_FILE = re.compile(rf"part-{UUID}-\d+")


def committed_files(path: pathlib.Path) -> dict[str, list[str]]:
    """Each committed part file (``part-<uuid>-<counter>``, Flink 2.x) -> its lines."""
    files = {}
    for file in path.rglob("*"):
        if file.is_file() and not file.name.startswith("."):
            assert PART_FILE.fullmatch(file.name), file.name
            files[file.name] = file.read_text().splitlines()
    return files


def committed_lines(path: pathlib.Path) -> list[str]:
    """The lines of the committed part files, sorted (part file names do not tell their order)."""
    return sorted(line for lines in committed_files(path).values() for line in lines)


def hidden_files(path: pathlib.Path) -> list[str]:
    return sorted(f.name for f in path.rglob(".*") if f.is_file())


def collected(sink: CollectSink) -> list:
    out = []
    while (batch := sink.buffer.poll_batch(0)) is not None:
        out.extend(batch)
    return out


RECORDS = [f"r{i:02d}" for i in range(40)]


# ----------------------------------------------------------------------- the protocol
def test_transactions_stage_pre_commit_and_commit_in_checkpoint_order() -> None:
    t = SinkTransactions()
    t.stage([1, 2])
    assert t.pre_commit(1) == [(f"{t.token}-1", 1, [1, 2])]
    t.stage([3])
    assert [s[1:] for s in t.pre_commit(2)] == [(1, [1, 2]), (2, [3])]  # 1 is not confirmed yet
    assert t.pre_commit(3) == t.pre_commit(3)  # nothing staged: no empty transaction
    assert [x.records for x in t.committable(1)] == [[1, 2]]
    t.stage([4])
    assert [x.records for x in t.end_of_input()] == [[3], [4]]
    assert t.pending == [] and t.staged == []


def test_file_sink_commits_part_files_only_when_their_checkpoint_completes(tmp_path: pathlib.Path) -> None:
    h = sink_harness(file_sink(tmp_path), configuration=CHECKPOINTING)
    h.process(RECORDS[:4])  # 16 bytes: rolled, pending
    h.operator.snapshot_state(1)
    h.process(RECORDS[4:8])  # rolled after checkpoint 1: waits for checkpoint 2
    assert committed_lines(tmp_path) == []
    h.operator.notify_checkpoint_complete(1)
    assert committed_lines(tmp_path) == RECORDS[:4]
    h.operator.snapshot_state(2)
    h.operator.notify_checkpoint_complete(2)
    assert committed_lines(tmp_path) == RECORDS[:8]


def test_file_sink_restore_commits_pending_and_drops_what_followed_the_checkpoint(tmp_path: pathlib.Path) -> None:
    sink = file_sink(tmp_path)
    h = sink_harness(sink, configuration=CHECKPOINTING)
    h.process(RECORDS[:4]).process(RECORDS[4:5])  # part 0 rolled before r04 (16 > 12 bytes): pending
    state = h.operator.snapshot_state(1)  # checkpoint 1 completes, but the notification is lost
    for i in range(5, 12, 3):  # after the checkpoint: parts 1 and 2 roll, part 3 is written
        h.process(RECORDS[i:i + 3])
    h.close()  # the task fails
    assert committed_lines(tmp_path) == [] and len(hidden_files(tmp_path)) == 4
    restored = sink_harness(sink, configuration=CHECKPOINTING, restored_state=state)
    assert committed_lines(tmp_path) == RECORDS[:4]  # checkpoint 1's pending part, committed on restore
    [in_progress] = hidden_files(tmp_path)  # part 1 cut back to the checkpoint, the rest removed
    assert re.fullmatch(rf"\.{PART_FILE.pattern[:-4]}-1\.inprogress\.{UUID}", in_progress), in_progress
    restored.process(RECORDS[5:12]).finish().close()  # the sources replay from checkpoint 1
    assert committed_lines(tmp_path) == RECORDS[:12] and hidden_files(tmp_path) == []


def test_file_sink_output_committed_at_end_of_input_is_undone_when_restoring_before_it(
        tmp_path: pathlib.Path) -> None:
    """A failure after a subtask finished (elsewhere in the job) restores a checkpoint before its end."""
    sink = file_sink(tmp_path)
    h = sink_harness(sink, configuration=CHECKPOINTING)
    h.process(RECORDS[:6])
    state = h.operator.snapshot_state(1)
    h.process(RECORDS[6:20]).finish().close()  # committed everything at its end of input
    assert committed_lines(tmp_path) == RECORDS[:20]
    sink_harness(sink, configuration=CHECKPOINTING, restored_state=state).process(RECORDS[6:20]).finish().close()
    assert committed_lines(tmp_path) == RECORDS[:20]


def test_file_sink_restored_at_another_parallelism_recovers_every_old_subtask(tmp_path: pathlib.Path) -> None:
    sink = file_sink(tmp_path)
    shares = [RECORDS[0::2], RECORDS[1::2]]  # what each of two subtasks receives
    old = [sink_harness(sink, configuration=CHECKPOINTING, subtask_index=i, parallelism=2) for i in range(2)]
    old[0].process(shares[0][:5])
    old[1].process(shares[1][:3])
    states = [h.operator.snapshot_state(1) for h in old]
    old[0].process(shares[0][5:9])  # lost
    for h in old:
        h.close()
    rest = shares[0][5:] + shares[1][3:]  # replayed, now spread over three subtasks
    new = [sink_harness(sink, configuration=CHECKPOINTING, subtask_index=i, parallelism=3,
                        restored_state={"raw_all": states}) for i in range(3)]
    for i, h in enumerate(new):
        h.process(rest[i::3]).finish().close()
    assert sorted(committed_lines(tmp_path)) == sorted(RECORDS)
    assert hidden_files(tmp_path) == []


def test_file_sink_restored_twice_from_one_checkpoint_removes_what_the_first_restored_attempt_committed(
        tmp_path: pathlib.Path) -> None:
    """A restored writer opens buckets with new UUIDs (as Flink); restored again from the same
    checkpoint, it finds them (their UUIDs come from the checkpointed seed) and removes them."""
    sink = file_sink(tmp_path)
    h = sink_harness(sink, configuration=CHECKPOINTING)
    h.process(RECORDS[:6])
    state = h.operator.snapshot_state(1)
    h.operator.notify_checkpoint_complete(1)
    h.close()
    first = sink_harness(sink, configuration=CHECKPOINTING, restored_state=state)
    first.process(RECORDS[6:20]).finish().close()  # committed, then the job fails elsewhere
    assert committed_lines(tmp_path) == RECORDS[:20] and len(committed_files(tmp_path)) > 2
    sink_harness(sink, configuration=CHECKPOINTING, restored_state=state).process(RECORDS[6:20]).finish().close()
    assert committed_lines(tmp_path) == RECORDS[:20] and hidden_files(tmp_path) == []


def test_file_sink_rescaled_twice_from_one_checkpoint_removes_what_a_new_subtask_committed(
        tmp_path: pathlib.Path) -> None:
    """A subtask that had no old state (parallelism 2 -> 3) derives its seed from the checkpoint:
    restored again, it finds what it committed the first time."""
    sink = file_sink(tmp_path)
    old = [sink_harness(sink, configuration=CHECKPOINTING, subtask_index=i, parallelism=2) for i in range(2)]
    old[0].process(RECORDS[:3])
    old[1].process(RECORDS[3:5])
    states = [h.operator.snapshot_state(1) for h in old]
    for h in old:
        h.close()
    rest = RECORDS[5:]
    for attempt in range(2):
        new = [sink_harness(sink, configuration=CHECKPOINTING, subtask_index=i, parallelism=3,
                            restored_state={"raw_all": states}) for i in range(3)]
        if attempt == 0:
            new[2].process(rest[2::3]).finish().close()  # subtask 2 finishes; the job then fails
            for h in new[:2]:
                h.close()
            continue
        for i, h in enumerate(new):
            h.process(rest[i::3]).finish().close()
    assert committed_lines(tmp_path) == RECORDS and hidden_files(tmp_path) == []


# --------------------------------------------------------------- random failures
class Run:
    """Drives one sink subtask through a run with checkpoints, lost notifications and failures."""

    def __init__(self, make: Callable[[Optional[dict]], Any], seed: int, failures: int = 4) -> None:
        self.make, self.rng, self.failures = make, random.Random(seed), failures

    def play(self, records: list) -> None:
        rng = self.rng
        checkpoint_id = 0
        completed: tuple[int, Optional[dict]] = (0, None)  # (source position, sink state) of the last one
        while True:
            position, state = completed
            h = self.make(state)
            failed = False
            while position < len(records):
                n = rng.randint(1, 5)
                h.process(records[position:position + n])
                position += n
                roll = rng.random()
                if roll < 0.3:
                    checkpoint_id += 1
                    snapshot = h.operator.snapshot_state(checkpoint_id)
                    if rng.random() < 0.8:  # the checkpoint completed (else: declined elsewhere)
                        completed = (position, snapshot)
                        if rng.random() < 0.7:  # its notification may be lost
                            h.operator.notify_checkpoint_complete(checkpoint_id)
                elif roll < 0.4 and self.failures:
                    failed = True
                    break
            if not failed:
                h.finish()
                # the job fails after this subtask finished (and committed): restored from a
                # checkpoint before its end (a restart without any checkpoint starts afresh and
                # cannot know what the failed attempt committed: not exactly-once, documented)
                if self.failures and completed[1] is not None and rng.random() < 0.3:
                    failed = True
            h.close()
            if not failed:
                return
            self.failures -= 1


@pytest.mark.parametrize("seed", range(12))
def test_file_sink_committed_output_equals_a_run_without_failures(tmp_path: pathlib.Path, seed: int) -> None:
    sink = file_sink(tmp_path, part_size=random.Random(seed).choice([8, 20, 1000]))
    Run(lambda state: sink_harness(sink, configuration=CHECKPOINTING, restored_state=state), seed).play(RECORDS)
    assert committed_lines(tmp_path) == RECORDS
    # in-progress files of an attempt that failed before the first checkpoint completed may
    # be left behind, hidden (as in Flink); readers of the directory never see them


@pytest.mark.parametrize("seed", range(12))
def test_collect_sink_delivers_every_record_exactly_once(seed: int) -> None:
    sink = CollectSink()
    Run(lambda state: sink_harness(sink, configuration=CHECKPOINTING, restored_state=state), seed).play(RECORDS)
    assert collected(sink) == RECORDS


@pytest.mark.parametrize("seed", range(12))
def test_pandas_sink_frame_holds_every_record_exactly_once(seed: int) -> None:
    sink = PandasSink("exactly once")
    Run(lambda state: sink_harness(sink, configuration=CHECKPOINTING, restored_state=state), seed).play(RECORDS)
    assert sink.records() == RECORDS


# ------------------------------------------------------------ visibility on commit
def test_collect_sink_with_checkpointing_delivers_on_checkpoint_completion() -> None:
    sink = CollectSink()
    h = sink_harness(sink, configuration=CHECKPOINTING)
    h.process([1, 2])
    assert collected(sink) == []  # staged
    state = h.operator.snapshot_state(1)
    h.process([3])
    h.operator.notify_checkpoint_complete(1)
    assert collected(sink) == [1, 2]
    h.close()  # fails after delivering checkpoint 1: the restore must not deliver it again
    sink_harness(sink, configuration=CHECKPOINTING, restored_state=state).process([3, 4]).finish()
    assert collected(sink) == [3, 4]
    assert sink.buffer.closed


def test_pandas_sink_with_checkpointing_shows_records_once_their_checkpoint_completed() -> None:
    sink = PandasSink("visible on commit")
    h = sink_harness(sink, configuration=CHECKPOINTING)
    h.process(["a", "b"])
    assert sink.records() == []
    h.operator.snapshot_state(1)
    h.process(["c"])
    h.operator.notify_checkpoint_complete(1)
    assert sink.records() == ["a", "b"]
    h.finish()
    assert sink.records() == ["a", "b", "c"]


def test_pandas_sink_restored_at_another_parallelism_keeps_every_old_part() -> None:
    sink = PandasSink("rescaled")
    old = [sink_harness(sink, configuration=CHECKPOINTING, subtask_index=i, parallelism=3) for i in range(3)]
    for i, h in enumerate(old):
        h.process([f"{i}-a", f"{i}-b"])
    states = [h.operator.snapshot_state(1) for h in old]
    old[0].operator.notify_checkpoint_complete(1)  # only subtask 0 heard of it before the failure
    new = [sink_harness(sink, configuration=CHECKPOINTING, subtask_index=i, parallelism=2,
                        restored_state={"raw_all": states}) for i in range(2)]
    assert sorted(sink.records()) == sorted(f"{i}-{x}" for i in range(3) for x in "ab")
    # old part 2 moved into new part 0: the next checkpoint of subtask 0 describes it
    assert new[0].operator.snapshot_state(2)["writer"]["records"] == 4


# ------------------------------------------------------- at-least-once, documented
def test_without_checkpointing_a_restarted_job_may_deliver_records_twice() -> None:
    """No checkpoints: the collect sink delivers at once; a restart replays the sources from
    the beginning, so the reader sees what came before the failure twice (at-least-once)."""
    sink = CollectSink()
    h = sink_harness(sink)
    h.process(["a", "b"])
    h.close()  # failure; no checkpoint to restore: the job starts over
    sink_harness(sink).process(["a", "b", "c"]).finish()
    assert collected(sink) == ["a", "b", "a", "b", "c"]


def test_without_checkpointing_a_restart_writes_again_what_a_finished_subtask_committed(
        tmp_path: pathlib.Path) -> None:
    """Without checkpointing rolled files stay pending until the end of input (as Flink): a
    failed subtask commits nothing, but one that finished before the job failed did."""
    failed, finished = file_sink(tmp_path / "failed"), file_sink(tmp_path / "finished")
    h = sink_harness(failed)
    h.process(RECORDS[:4]).process(RECORDS[4:10])  # parts 0 and 1 rolled: pending, not committed
    h.close()
    assert committed_lines(tmp_path / "failed") == [] and len(hidden_files(tmp_path / "failed")) == 3
    sink_harness(finished).process(RECORDS[:4]).finish().close()  # the job fails elsewhere after this
    for sink in (failed, finished):  # the restarted job starts over
        sink_harness(sink).process(RECORDS[:6]).finish().close()
    assert committed_lines(tmp_path / "failed") == RECORDS[:6]
    assert committed_lines(tmp_path / "finished") == sorted(RECORDS[:4] + RECORDS[:6])  # duplicates


def test_at_least_once_checkpoints_commit_records_the_sources_replay(tmp_path: pathlib.Path) -> None:
    """AT_LEAST_ONCE mode does not align barriers: a record that arrives on an input whose
    barrier already passed is written before the snapshot, yet its source's checkpointed
    position is before it, so after a restore it is replayed and committed twice."""
    sink = file_sink(tmp_path, part_size=1000)
    h = sink_harness(sink, configuration=CHECKPOINTING)
    h.process(["a1", "b1"])
    # the barrier arrived from input a (its source's position: after a1) but not yet from b;
    # unaligned, the sink goes on with a2 from input a, then b's barrier triggers the snapshot
    h.process(["a2"])
    state = h.operator.snapshot_state(1)
    h.operator.notify_checkpoint_complete(1)
    h.close()
    restored = sink_harness(sink, configuration=CHECKPOINTING, restored_state=state)
    restored.process(["a2", "b2"]).finish().close()  # input a replays from after a1
    assert sorted(committed_lines(tmp_path)) == ["a1", "a2", "a2", "b1", "b2"]


def test_a_sink_that_cannot_redistribute_its_state_refuses_another_parallelism(tmp_path: pathlib.Path) -> None:
    sink = CsvSink(str(tmp_path / "out"))
    old = [sink_harness(sink, subtask_index=i, parallelism=2) for i in range(2)]
    states = [h.operator.snapshot_state(1) for h in old]
    with pytest.raises(InvalidProgramError, match="cannot be restored at another parallelism.*restore at "
                                                  "parallelism 2"):
        sink_harness(sink, subtask_index=0, parallelism=3, restored_state={"raw_all": states})


# ------------------------------------------------------------------ end to end
def paced(records: list, chunk: int = 40, pause_ms: int = 15) -> list:
    """The records with a short pause after every chunk, so checkpoints happen in between."""
    script: list = []
    for i in range(0, len(records), chunk):
        script += records[i:i + chunk] + [Pause(pause_ms)]
    return script


def failing_script(records: list) -> list:
    """The records, with two scripted crashes; each comes after a pause long enough for checkpoints."""
    third = len(records) // 3
    return (paced(records[:third]) + [Pause(250), Fail("first crash")] + paced(records[third:2 * third])
            + [Pause(250), Fail("second crash")] + paced(records[2 * third:]))


def checkpointing_env(tmp_path: pathlib.Path, parallelism: int = 2) -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment(Configuration.from_dict({
        "execution.checkpointing.dir": str(tmp_path / "checkpoints"),
        "restart-strategy.type": "fixed-delay", "restart-strategy.fixed-delay.attempts": "10",
        "restart-strategy.fixed-delay.delay": "20 ms"}))
    env.enable_checkpointing(50)
    env.set_parallelism(parallelism)
    return env


LINES = [f"line-{i:04d}" for i in range(900)]


def test_a_file_sink_job_with_failures_commits_exactly_the_failure_free_output(tmp_path: pathlib.Path) -> None:
    env = checkpointing_env(tmp_path)
    (env.from_source(ScriptedSource(failing_script(LINES)), WatermarkStrategy.no_watermarks(), "lines").uid("lines")
        .map(str.upper).uid("upper")
        .sink_to(file_sink(tmp_path / "out", part_size=600)).uid("files"))
    result = env.execute("exactly-once files")
    assert result.get_num_restarts() == 2
    # source subtask i reads records i, i + 2, ... (round-robin) and feeds sink subtask i
    assert committed_lines(tmp_path / "out") == sorted(line.upper() for line in LINES)
    shares = [{line.upper() for line in LINES[subtask::2]} for subtask in range(2)]
    for name, lines in committed_files(tmp_path / "out").items():
        assert any(set(lines) <= share for share in shares), name  # each part file is one subtask's


def test_execute_and_collect_with_checkpointing_sees_every_record_once_despite_failures(
        tmp_path: pathlib.Path) -> None:
    env = checkpointing_env(tmp_path)
    ds = env.from_source(ScriptedSource(failing_script(LINES)), WatermarkStrategy.no_watermarks(), "lines")
    with ds.uid("lines").map(str.upper).uid("upper").execute_and_collect("exactly-once collect") as results:
        got = list(results)
    assert sorted(got) == sorted(line.upper() for line in LINES)


def test_a_pandas_sink_job_with_failures_holds_every_record_once(tmp_path: pathlib.Path) -> None:
    env = checkpointing_env(tmp_path)
    sink = PandasSink("exactly once", columns=["line"])
    (env.from_source(ScriptedSource(failing_script(LINES)), WatermarkStrategy.no_watermarks(), "lines").uid("lines")
        .sink_to(sink).uid("frame"))
    assert env.execute("exactly-once pandas").get_num_restarts() == 2
    assert sorted(sink.to_pandas()["line"]) == LINES
