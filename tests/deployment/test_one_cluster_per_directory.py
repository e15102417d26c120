"""One cluster per ``--dir`` (issue 29, item 5): starts racing in one directory.

Two ``cluster start`` at the same moment give one JobManager; the other is refused in one line
naming it (pid, REST address), and ``cluster stop`` then leaves no process of the directory. The
same holds for starts in threads of one process (the tightest race: both check the directory
within microseconds), a JobManager that was SIGKILLed does not block the next start (its lock
died with it), and TaskManagers started at once in one directory get distinct numbers.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from streamkernel.runtime.entrypoint import commands
from streamkernel.runtime.entrypoint.cluster_dir import ClusterDir
from streamkernel.runtime.rest.cluster_secret import HOME_ENV
from streamkernel.testing.waiting import wait_until

TIMEOUT = 120.0
REPOSITORY = Path(__file__).resolve().parents[2]
_ENTRY_MARK = b"streamkernel.runtime.entrypoint."


def _environment(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("STREAMKERNEL_CONFIGURATION", "STREAMKERNEL_CLUSTER_SECRET", "STREAMKERNEL_SECRET_FILE",
                        "STREAMKERNEL_BACKEND")}
    env[HOME_ENV] = str(home)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPOSITORY), env.get("PYTHONPATH")) if p)
    return env


def _sk(home: Path, *args: str) -> subprocess.Popen:
    """``streamkernel ARGS`` as a shell runs it, started (not waited for)."""
    return subprocess.Popen([sys.executable, "-m", "streamkernel", *args], cwd=home.parent, env=_environment(home),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _live_processes() -> Iterator[tuple[int, int, bytes]]:
    """(pid, parent pid, command line) of every live (not zombie) process."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes()
            fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z":
            yield int(proc.name), int(fields[1]), cmdline


def _processes_of(directory: Path) -> list[int]:
    """The pids of every live entry-point process whose command line names ``directory`` (JobManagers
    have ``--dir DIR``, TaskManagers ``-D log.file=DIR/log/...``)."""
    return sorted(pid for pid, _, cmdline in _live_processes()
                  if _ENTRY_MARK in cmdline and str(directory).encode() in cmdline)


def _with_children(pids: list[int]) -> list[int]:
    """``pids`` and their live children (a JobManager's REST front process)."""
    return sorted(set(pids) | {pid for pid, parent, _ in _live_processes() if parent in pids})


def _alive(pids: list[int]) -> list[int]:
    live = {pid for pid, _, _ in _live_processes()}
    return [pid for pid in pids if pid in live]


@pytest.fixture
def directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A cluster directory (the user's registry under ``tmp_path/home``); whatever of it still runs at
    the end is killed (never needed when the tests pass: each asserts nothing is left)."""
    monkeypatch.setenv(HOME_ENV, str(tmp_path / "home"))
    path = tmp_path / "cluster"
    yield path
    for pid in _processes_of(path):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _race(*calls: Callable[[], Any]) -> list[Any]:
    """Run the calls in threads released at the same moment; each one's result or exception."""
    results: list[Any] = [None] * len(calls)
    barrier = threading.Barrier(len(calls))

    def run(index: int) -> None:
        barrier.wait()
        try:
            results[index] = calls[index]()
        except Exception as error:  # noqa: BLE001 - the refused start's error is the result
            results[index] = error

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(TIMEOUT)
    return results


def _line(pattern: str, text: str) -> str:
    """The group of the line of ``text`` that is ``pattern``."""
    found = re.search(f"^{pattern}$", text, re.MULTILINE)
    assert found is not None, text
    return found.group(1)


def _refusal(directory: Path, pid: int, rest_url: str) -> str:
    return (f"a cluster is already running in {directory} (JobManager pid {pid}, REST {rest_url}); stop it first "
            f"with `streamkernel cluster stop --dir {directory}`")


def test_two_cluster_starts_at_once_give_one_cluster_and_a_one_line_refusal(directory: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    for _ in range(2):
        starts = [_sk(home, "cluster", "start", "--dir", str(directory), "-D", "rest.port=0") for _ in range(2)]
        outputs = [process.communicate(timeout=TIMEOUT) for process in starts]
        done = [(process.returncode, out, err) for process, (out, err) in zip(starts, outputs)]
        assert sorted(code for code, _, _ in done) == [0, 1], done
        [(_, out, _)] = [d for d in done if d[0] == 0]
        [(_, refused_out, refused)] = [d for d in done if d[0] == 1]
        rest_url = _line(r"REST (\S+)", out)
        jobmanager = int(_line(r"pid (\d+) \(standalonesession-0\)", out))
        assert refused_out == ""
        assert refused == f"streamkernel cluster start: {_refusal(directory, jobmanager, rest_url)}\n"
        running = _processes_of(directory)
        assert len(running) == 2 and jobmanager in running  # the one JobManager and its one TaskManager
        running = _with_children(running)  # and the JobManager's REST front

        stop = _sk(home, "cluster", "stop", "--dir", str(directory))
        stop.communicate(timeout=TIMEOUT)
        assert stop.returncode == 0
        wait_until(lambda running=running: _alive(running) == [] and _processes_of(directory) == [], 30,
                   message=f"no process of {directory} left")


def test_racing_starts_in_one_process_start_one_jobmanager_and_a_killed_ones_lock_dies_with_it(
        directory: Path) -> None:
    for _ in range(3):
        results = _race(*[lambda: commands.start_jobmanager(ClusterDir(str(directory)), {"rest.port": "0"})] * 2)
        [started] = [r for r in results if isinstance(r, dict)]
        [refused] = [r for r in results if not isinstance(r, dict)]
        assert isinstance(refused, commands.StandaloneClusterError), refused
        assert str(refused) == _refusal(directory, started["pid"], started["rest_url"])
        assert _processes_of(directory) == [started["pid"]]
        running = _with_children([started["pid"]])
        os.kill(started["pid"], signal.SIGKILL)  # its lock must not block the next round
        wait_until(lambda running=running: _alive(running) == [], 30, message="the killed JobManager and its REST front to be gone")
    commands.stop_cluster(ClusterDir(str(directory)))


def test_taskmanagers_started_at_once_in_one_directory_take_distinct_numbers(directory: Path) -> None:
    cluster = ClusterDir(str(directory))
    jobmanager = commands.start_jobmanager(cluster, {"rest.port": "0"})
    running = _with_children([jobmanager["pid"]])
    started = _race(*[lambda: commands.start_taskmanager(ClusterDir(str(directory)), {})] * 3)
    assert all(isinstance(s, commands.StartedTaskManager) for s in started), started
    assert sorted(s.number for s in started) == [0, 1, 2]
    assert cluster.pids("taskexecutor") == {s.number: s.pid for s in started}
    commands.stop_cluster(cluster)
    wait_until(lambda running=running: _alive(running) == [] and _processes_of(directory) == [], 30,
               message=f"no process of {directory} left")
