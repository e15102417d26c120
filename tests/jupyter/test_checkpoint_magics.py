"""%flink checkpoint / savepoint / restore / checkpoints / kill-taskmanager / fail through IPython.

The jobs count words per key (a keyed running count) from a scripted, replayable source
that holds at a Gate until the test opens it, into an overwriting sink
(``latest[word] = count``): the final values equal the counts computed here from the
script only if every key's state survived the checkpoints, failures and restores.
Every mistake in a magic's line must be a one-line ``UsageError``, never a traceback.
"""

from __future__ import annotations

import collections
import os
import shutil
from typing import Any, Callable

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from streamkernel.state import read_checkpoint
from streamkernel.testing import wait_until

WORDS = [f"w{(i * 7) % 13}" for i in range(600)]

SETUP = ("import collections\n"
         "from streamkernel.common import Configuration, WatermarkStrategy\n"
         "from streamkernel.testing import Gate, ScriptedSource\n"
         f"WORDS = {WORDS!r}\n")

BUILD = """
env.configure(Configuration.from_dict({{
    'execution.checkpointing.dir': {checkpoints!r},
    'restart-strategy.type': 'fixed-delay', 'restart-strategy.fixed-delay.attempts': '5',
    'restart-strategy.fixed-delay.delay': '0 ms'}}))
env.enable_checkpointing({interval})
(env.from_source(ScriptedSource(script), WatermarkStrategy.no_watermarks(), 'words').set_parallelism(1).uid('words')
    .map(lambda w: (w, 1)).uid('ones')
    .key_by(lambda t: t[0]).reduce(lambda a, b: (a[0], a[1] + b[1])).name('Counts').uid({counts_uid!r})
    .add_sink(lambda t: latest.__setitem__(t[0], t[1])).uid('sink'))
"""


def build(ip: InteractiveShell, tmp_path: Any, parallelism: int = 2, interval: int = 3_600_000,
          counts_uid: str = "counts", new_script: bool = True) -> None:
    """Add the counting dataflow to the notebook's ``env`` (a %%flink cell); ``new_script``
    makes a fresh script ``WORDS[:200] + [gate] + WORDS[200:]`` and a fresh ``latest``."""
    if new_script:
        ip.run_cell("gate = Gate('part one'); gates = [gate]\n"
                    "script = WORDS[:200] + [gate] + WORDS[200:]\n"
                    "latest = {}")
    ip.run_cell_magic("flink", f"--show none --parallelism {parallelism} --name counting",
                      BUILD.format(checkpoints=str(tmp_path / "checkpoints"), interval=interval,
                                   counts_uid=counts_uid))


def running(client: Any) -> bool:
    return client.get_job_status().result().name == "RUNNING" and all(
        s.state.value == "RUNNING" for s in client.get_job_details().subtasks)


def part_one_counted(ip: InteractiveShell) -> Callable[[], bool]:
    return lambda: ip.user_ns["latest"] == collections.Counter(WORDS[:200]) and running(ip.user_ns["job"])


def usage_error(ip: InteractiveShell, line: str, match: str) -> str:
    """Run ``%flink line``; it must raise a one-line UsageError matching ``match``."""
    with pytest.raises(UsageError, match=match) as caught:
        ip.run_line_magic("flink", line)
    message = str(caught.value)
    assert "\n" not in message and "Traceback" not in message
    return message


# ------------------------------------------------------------------ checkpoint, checkpoints
def test_checkpoint_and_the_history_with_per_subtask_acknowledgements(shell, tmp_path, capsys) -> None:
    ip, shown = shell
    ip.run_line_magic("flink", "start --taskmanagers 1 --slots 2")
    usage_error(ip, "checkpoints", "no job has run on this cluster yet")
    usage_error(ip, "checkpoint", "no job is running; jobs: none")
    build(ip, tmp_path)
    ip.run_line_magic("flink", "submit")
    wait_until(part_one_counted(ip), message="part one")
    ip.run_line_magic("flink", "checkpoint")
    first = ip.user_ns["checkpoint"]
    ip.run_line_magic("flink", "checkpoint counting")
    second = ip.user_ns["checkpoint"]
    assert os.path.basename(first) == "chk-1" and os.path.basename(second) == "chk-2"
    assert f"completed: {second}" in capsys.readouterr().out

    # the checkpoint is a consistent cut: the counts in it are those of the records the source had read
    view = read_checkpoint(second)
    counts = {row.key: row.value[1] for row in view.keyed_state("counts").itertuples()}
    assert counts == collections.Counter(WORDS[:200])
    assert view.raw_state("words")[0]["position"][1] == 200

    shown.clear()
    ip.run_line_magic("flink", "checkpoints")
    history, acks = shown
    assert list(history["id"]) == [2, 1] and set(history["status"]) == {"COMPLETED"}
    # three tasks: the source (parallelism 1), the map and the chained counts -> sink (2 each)
    assert set(history["type"]) == {"checkpoint"} and set(history["acknowledged"]) == {"5/5"}
    assert list(history["path"]) == [second, first] and (history["state_size"] > 0).all()
    assert not history["unaligned"].any() and (history["persisted_data"] == 0).all()  # aligned (the default)
    assert all(len(t) == 12 and t[2] == ":" for t in history["trigger_time"])  # HH:MM:SS.mmm
    # one row per subtask of the newest completed checkpoint, named as in the job's graph
    assert set(acks["checkpoint"]) == {2}
    assert sorted(zip(acks["task"], acks["subtask"])) == [
        ("Counts -> Sink: Unnamed", "1/2"), ("Counts -> Sink: Unnamed", "2/2"),
        ("Map", "1/2"), ("Map", "2/2"), ("Source: words", "1/1")]
    assert (acks["ack_after_ms"] >= 0).all() and acks["state_size"].sum() == history["state_size"].iloc[0]

    usage_error(ip, "checkpoints nosuch", "no job matches 'nosuch'; jobs: .* \\(counting, RUNNING\\)")
    usage_error(ip, "checkpoint nosuch", "no running job matches 'nosuch'")
    ip.user_ns["job"].cancel().result(timeout=10)
    usage_error(ip, "checkpoint", "no job is running; jobs: .*counting, CANCELED")


def test_checkpoints_of_a_job_without_any_says_how_to_get_some(shell, tmp_path, capsys) -> None:
    ip, shown = shell
    ip.run_line_magic("flink", "start --slots 2")
    build(ip, tmp_path)
    ip.run_line_magic("flink", "submit")
    wait_until(part_one_counted(ip), message="part one")
    shown.clear()
    ip.run_line_magic("flink", "checkpoints counting")
    assert shown == [] and "No checkpoints yet" in capsys.readouterr().out


# ------------------------------------------------------------------ savepoint, restore
def test_savepoint_then_stop_with_savepoint_then_restore_at_parallelism_3_keeps_every_key(shell, tmp_path) -> None:
    ip, shown = shell
    ip.run_line_magic("flink", "start --taskmanagers 2 --slots 2")
    build(ip, tmp_path)
    ip.run_line_magic("flink", "submit")
    wait_until(part_one_counted(ip), message="part one")
    target = tmp_path / "savepoints"
    ip.run_line_magic("flink", f"savepoint --dir {target}")
    kept = ip.user_ns["savepoint"]
    assert ip.user_ns["job"].get_job_status().result().name == "RUNNING"  # a savepoint alone does not stop
    ip.run_line_magic("flink", f"savepoint counting --stop --dir {target}")
    stopped = ip.user_ns["savepoint"]
    assert ip.user_ns["job"].get_job_status().result().name == "FINISHED"
    assert os.path.dirname(kept) == os.path.dirname(stopped) == str(target) and kept != stopped
    shown.clear()
    ip.run_line_magic("flink", "checkpoints")
    assert list(shown[0]["type"]) == ["savepoint", "savepoint"] and list(shown[0]["path"]) == [stopped, kept]

    # restoring is submitting the same program again (same uids) with the savepoint's state
    build(ip, tmp_path, new_script=False)
    ip.user_ns["latest"] = latest = {}
    ip.user_ns["env"].set_parallelism(1)
    ip.run_line_magic("flink", "restore {savepoint} --parallelism 3")  # IPython expands {savepoint}
    client = ip.user_ns["job"]
    wait_until(lambda: running(client), message="the restored job")
    assert [v.parallelism for v in client.get_job_details().vertices] == [1, 3, 3]  # source, map, counts -> sink
    restored = client.get_job_details().checkpoints.latest_restored
    assert restored.is_savepoint and restored.external_path == stopped
    ip.user_ns["gate"].open()
    client.get_job_execution_result().result(timeout=30)
    # only records after the gate were read again; every key continued from its saved count
    assert latest == collections.Counter(WORDS)

    # the recovery path and the parallelism applied to that submission only
    env = ip.user_ns["env"]
    assert env.get_parallelism() == 1 and env.to_configuration_dict()["execution.state-recovery.path"] == ""
    build(ip, tmp_path)
    ip.run_line_magic("flink", "submit")
    fresh = ip.user_ns["job"]
    wait_until(part_one_counted(ip), message="a fresh job")
    assert fresh.get_job_details().checkpoints.latest_restored is None
    assert [v.parallelism for v in fresh.get_job_details().vertices] == [1, 2, 2]


def test_restore_refuses_wrong_input_in_one_line_and_submits_nothing(shell, tmp_path) -> None:
    ip, shown = shell
    ip.run_line_magic("flink", "start --taskmanagers 1 --slots 2")
    usage_error(ip, f"restore {tmp_path}", "the dataflow is empty; build it again")
    build(ip, tmp_path)
    ip.run_line_magic("flink", "submit")
    wait_until(part_one_counted(ip), message="part one")
    ip.run_line_magic("flink", f"savepoint --stop --dir {tmp_path / 'savepoints'}")
    savepoint = ip.user_ns["savepoint"]
    jobs_before = len(ip.user_ns["cluster"].jobs())

    build(ip, tmp_path, new_script=False)
    usage_error(ip, f"restore {tmp_path / 'nothing-here'}", "no checkpoint or savepoint at .*nothing-here; give a")
    (tmp_path / "a-file").write_text("not a savepoint")
    usage_error(ip, f"restore {tmp_path / 'a-file'}", "no checkpoint or savepoint at")
    corrupt = tmp_path / "corrupt"
    shutil.copytree(savepoint, corrupt)
    victim = corrupt / sorted(f for f in os.listdir(corrupt) if f.endswith(".state"))[0]
    with open(victim, "r+b") as file:
        file.truncate(10)
    message = usage_error(ip, f"restore {corrupt}", "truncated")
    assert victim.name in message and "cannot be restored" in message
    (corrupt / "_metadata").write_bytes(b"{ not json")
    usage_error(ip, f"restore {corrupt}", "_metadata")
    message = usage_error(ip, "restore {savepoint} --parallelism 200", "would run at parallelism 200, above the "
                                                                        "max parallelism 128")
    assert "at most 128" in message
    usage_error(ip, "restore {savepoint} --parallelism 0", "expected a positive integer, got 0")
    assert len(ip.user_ns["cluster"].jobs()) == jobs_before  # nothing was submitted
    env = ip.user_ns["env"]
    assert {t.parallelism for t in env.transformations if t.name != "words"} == {2}  # --parallelism undone
    assert env.to_configuration_dict()["execution.state-recovery.path"] == ""

    ip.run_line_magic("flink", "reset")
    build(ip, tmp_path, counts_uid="renamed", new_script=False)
    usage_error(ip, "restore {savepoint}", r"operator state of 'counts' \(Counts\) has no matching uid")
    assert len(ip.user_ns["cluster"].jobs()) == jobs_before

    ip.run_line_magic("flink", "reset")
    build(ip, tmp_path, new_script=False)
    ip.user_ns["latest"] = latest = {}
    ip.run_line_magic("flink", "restore {savepoint}")  # the same parallelism: the dataflow is still usable
    ip.user_ns["gate"].open()
    ip.user_ns["job"].get_job_execution_result().result(timeout=30)
    assert latest == collections.Counter(WORDS)


def test_savepoint_errors_are_one_line(shell, tmp_path) -> None:
    ip, shown = shell
    usage_error(ip, "savepoint", "no cluster is running; start one with %flink start")
    usage_error(ip, "checkpoints", "no cluster is running")
    ip.run_line_magic("flink", "start --slots 2")
    usage_error(ip, "savepoint --stop", "no job is running")
    usage_error(ip, "savepoint --drain", "--drain needs --stop")
    build(ip, tmp_path)
    ip.run_line_magic("flink", "submit")
    wait_until(part_one_counted(ip), message="part one")
    (tmp_path / "a-file").write_text("in the way")
    usage_error(ip, f"savepoint --dir {tmp_path / 'a-file'}",
                "savepoint failed: savepoint target directory: .*a-file is a regular file, not a directory")
    assert ip.user_ns["job"].get_job_status().result().name == "RUNNING"  # a failed savepoint changes nothing
    build(ip, tmp_path)
    ip.run_line_magic("flink", "submit")
    usage_error(ip, "savepoint", "several running jobs match; pick one with its name or id")
    usage_error(ip, "fail Counts", "several running jobs match; pick one with --job JOB")


# ------------------------------------------------------------------ failures
def test_fail_and_kill_taskmanager_recover_from_the_latest_checkpoint_with_exact_counts(shell, tmp_path) -> None:
    ip, shown = shell
    usage_error(ip, "fail Counts", "no cluster is running")
    ip.run_line_magic("flink", "start --taskmanagers 2 --slots 2")
    usage_error(ip, "fail Counts", "no job is running")
    build(ip, tmp_path, interval=100)
    ip.run_line_magic("flink", "submit")
    client = ip.user_ns["job"]
    wait_until(part_one_counted(ip), message="part one")
    completed = lambda: client.get_job_details().checkpoints.num_completed  # noqa: E731
    done = completed()
    wait_until(lambda: completed() > done, message="a checkpoint after part one")

    usage_error(ip, "fail NoSuchOperator", "no operator named 'NoSuchOperator'.*'counts'")
    ip.run_line_magic("flink", "fail Counts")
    wait_until(lambda: client.get_job_details().num_restarts == 1 and running(client), message="restart 1")
    assert ip.user_ns["latest"] == collections.Counter(WORDS[:200])  # restored, not counted twice

    cluster = ip.user_ns["cluster"]
    busy = next(tm.index + 1 for tm in cluster.inspection.taskmanagers if any(s.job_id for s in tm.slots))
    usage_error(ip, "kill-taskmanager 9", "no live TaskManager 'TM9'")
    ip.run_line_magic("flink", f"kill-taskmanager {busy} --replace")
    usage_error(ip, f"kill-taskmanager {busy}", f"no live TaskManager 'TM{busy}'")
    wait_until(lambda: client.get_job_details().num_restarts == 2 and running(client), message="restart 2")
    ip.user_ns["gate"].open()
    result = client.get_job_execution_result().result(timeout=30)

    assert ip.user_ns["latest"] == collections.Counter(WORDS)
    assert result.get_num_restarts() == 2
    history = client.get_job_details().exception_history
    assert [(e.exception_name, e.restarted) for e in history] == [
        ("InjectedFailure", True), ("TaskManagerLostError", True)]
    assert "injected" in history[0].message.lower()
