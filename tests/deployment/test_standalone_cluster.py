"""The standalone session cluster from the shell (issue 17, part A): real processes, started and
stopped by the tests, their pids checked afterwards.

``streamkernel cluster start`` (a JobManager process and TaskManager processes, detached),
``streamkernel run -m`` against it, Flink's REST log endpoints, ``taskmanager start -m`` from
another shell, Flink's own CLI, ``cluster status|stop``; a SIGKILLed JobManager's TaskManagers
exit by themselves; bad input is one line and exit code 1.
"""

from __future__ import annotations

import http.server
import importlib.util
import json
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import textwrap
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import pytest

from streamkernel.testing.waiting import wait_until

_spec = importlib.util.spec_from_file_location("flink_tools", Path(__file__).parents[1] / "flink_tools.py")
assert _spec is not None and _spec.loader is not None
flink_tools = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(flink_tools)

TIMEOUT = 120.0

BOUNDED_JOB = textwrap.dedent("""
    import os, sys
    from streamkernel.common import Types
    from streamkernel.datastream import StreamExecutionEnvironment

    OUT = sys.argv[1]

    def triple(x):  # defined in the script: travels to the cluster by value
        return x * 3

    def write(x):
        with open(OUT, "a") as out:
            out.write(f"{x} {os.getpid()}\\n")

    env = StreamExecutionEnvironment.get_execution_environment()
    tripled = env.from_collection([1, 2, 3, 4], type_info=Types.INT()).map(triple, output_type=Types.INT())
    tripled.add_sink(write).set_parallelism(1)
    tripled.map(lambda x: f"printed {x}", output_type=Types.STRING()).print().set_parallelism(1)
    env.execute("tripled on the standalone cluster")
""")


def _alive(pid: int) -> bool:
    """os.kill(pid, 0), a zombie (ended, not yet reaped by init) counting as dead."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _environment(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("STREAMKERNEL_CONFIGURATION", "STREAMKERNEL_CLUSTER_SECRET", "STREAMKERNEL_SECRET_FILE",
                        "STREAMKERNEL_BACKEND")}
    env["STREAMKERNEL_HOME"] = str(home)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(Path(__file__).parents[2]), env.get("PYTHONPATH")) if p)
    return env


def sk(home: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    """Run ``streamkernel ARGS`` as a shell would (a process of its own)."""
    return subprocess.run([sys.executable, "-m", "streamkernel", *args], cwd=cwd, env=_environment(home),
                          capture_output=True, text=True, timeout=TIMEOUT)


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=30) as response:
        return json.loads(response.read().decode("utf-8"))


def get_text(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as response:
        return response.read().decode("utf-8")


def _pids(stdout: str) -> list[int]:
    return [int(m) for m in re.findall(r"^pid (\d+)", stdout, re.MULTILINE)]


def _rest_url(stdout: str) -> str:
    found = re.search(r"^REST (http://\S+)$", stdout, re.MULTILINE)
    assert found is not None, stdout
    return found.group(1)


@dataclass
class Standalone:
    """A started standalone cluster: its directory, the user's home, REST URL, pids (JobManager first)."""

    directory: Path
    home: Path
    rest_url: str
    pids: list[int]
    start_output: str

    @property
    def address(self) -> str:
        return self.rest_url.removeprefix("http://")


def _start(tmp: Path, home: Path, *args: str) -> Standalone:
    directory = tmp / "cluster"
    done = sk(home, "cluster", "start", "--dir", str(directory), "-D", "rest.port=0", *args, cwd=tmp)
    assert done.returncode == 0, done.stderr
    return Standalone(directory, home, _rest_url(done.stdout), _pids(done.stdout), done.stdout)


def _kill_all(cluster: Standalone) -> None:
    """Teardown safety net: stop what a failed test left running (never needed when the tests pass)."""
    if (cluster.directory / "pid").is_dir() and any((cluster.directory / "pid").iterdir()):
        sk(cluster.home, "cluster", "stop", "--dir", str(cluster.directory), cwd=cluster.directory.parent)
    for pid in cluster.pids:
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Standalone]:
    """1 JobManager + 2 TaskManagers of 2 slots, shared by the tests of the module (the last one stops it)."""
    tmp = tmp_path_factory.mktemp("standalone")
    cluster = _start(tmp, tmp / "home", "--taskmanagers", "2", "--slots", "2")
    yield cluster
    _kill_all(cluster)


def test_start_prints_rest_and_a_pid_per_process_once_every_taskmanager_registered(standalone: Standalone) -> None:
    assert len(standalone.pids) == 3 and all(_alive(pid) for pid in standalone.pids), standalone.start_output
    overview = get_json(standalone.rest_url + "/overview")
    assert (overview["taskmanagers"], overview["slots-total"]) == (2, 4)
    # the layout: Flink's log names, pid files, the secret readable by its user only, and in the user's registry
    logs = {p.name for p in (standalone.directory / "log").iterdir()}
    assert any(re.fullmatch(r"streamkernel-.+-standalonesession-0-.+\.log", n) for n in logs), logs
    assert any(re.fullmatch(r"streamkernel-.+-taskexecutor-1-.+\.out", n) for n in logs), logs
    assert sorted(p.name for p in (standalone.directory / "pid").iterdir()) == [
        "standalonesession-0.pid", "taskexecutor-0.pid", "taskexecutor-1.pid"]
    secret = standalone.directory / "cluster.secret"
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    host, port = standalone.address.split(":")
    registered = standalone.home / "clusters" / f"{host}-{port}.secret"
    assert registered.read_text() == secret.read_text()


def test_run_m_submits_a_bounded_job_that_finishes_on_the_taskmanager_processes(standalone: Standalone,
                                                                                tmp_path: Path) -> None:
    (tmp_path / "job.py").write_text(BOUNDED_JOB)
    out = tmp_path / "out.txt"
    done = sk(standalone.home, "run", "-m", standalone.address, "job.py", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    found = re.search(r"Job with JobID ([0-9a-f]{32}) has finished\.", done.stdout)
    assert found is not None, done.stdout
    job = get_json(f"{standalone.rest_url}/jobs/{found.group(1)}")
    assert (job["name"], job["state"]) == ("tripled on the standalone cluster", "FINISHED")
    rows = [line.split() for line in out.read_text().splitlines()]
    assert sorted(int(value) for value, _ in rows) == [3, 6, 9, 12]
    # the sink ran in a TaskManager process, not in the JobManager nor the client
    assert {int(pid) for _, pid in rows} <= set(standalone.pids[1:])
    # print() wrote to that TaskManager's .out file, as in Flink
    printed = "".join(p.read_text() for p in (standalone.directory / "log").glob("*taskexecutor-*.out"))
    assert sorted(re.findall(r"printed (\d+)", printed), key=int) == ["3", "6", "9", "12"]


def test_rest_serves_the_processes_log_files_in_flinks_shapes(standalone: Standalone) -> None:
    listed = get_json(standalone.rest_url + "/jobmanager/logs")["logs"]
    names = {entry["name"] for entry in listed}
    assert any(n.endswith(".log") and "standalonesession" in n for n in names), listed
    assert all(set(entry) == {"name", "size", "mtime"} for entry in listed)
    assert "standalone session cluster running" in get_text(standalone.rest_url + "/jobmanager/log")
    get_text(standalone.rest_url + "/jobmanager/stdout")  # served (empty unless the JobManager printed)
    taskmanager = get_json(standalone.rest_url + "/taskmanagers")["taskmanagers"][0]["id"]
    assert f"TaskManager {taskmanager} registered" in get_text(f"{standalone.rest_url}/taskmanagers/{taskmanager}/log")
    assert get_json(f"{standalone.rest_url}/taskmanagers/{taskmanager}/logs")["logs"]
    with pytest.raises(urllib.error.HTTPError) as unknown:
        get_text(f"{standalone.rest_url}/taskmanagers/no-such-tm/log")
    assert unknown.value.code == 404


def test_taskmanager_start_from_another_shell_adds_its_slots(standalone: Standalone, tmp_path: Path) -> None:
    before = get_json(standalone.rest_url + "/overview")["slots-total"]
    other = tmp_path / "elsewhere"  # another directory: the secret comes from the user's registry
    done = sk(standalone.home, "taskmanager", "start", "-m", standalone.address, "--dir", str(other), "--slots", "3",
              cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    [pid] = _pids(done.stdout)
    standalone.pids.append(pid)
    overview = get_json(standalone.rest_url + "/overview")
    assert overview["slots-total"] == before + 3 and overview["taskmanagers"] == 3
    assert (other / "pid" / "taskexecutor-0.pid").read_text().strip() == str(pid)

    stopped = sk(standalone.home, "taskmanager", "stop", "--dir", str(other), cwd=tmp_path)
    assert stopped.returncode == 0, stopped.stderr
    host = socket.gethostname().split(".")[0]
    assert stopped.stdout.strip() == f"Stopping taskexecutor daemon (pid: {pid}) on host {host}."
    wait_until(lambda: not _alive(pid), 30, message=f"the stopped TaskManager {pid} to exit")
    wait_until(lambda: get_json(standalone.rest_url + "/overview")["slots-total"] == before, 30,
               message=f"the cluster to be back to {before} slots")
    standalone.pids.remove(pid)


def test_flinks_own_cli_lists_the_clusters_jobs(standalone: Standalone) -> None:
    flink_tools.flink_home()
    flink_tools.java_executable()
    code, out, err = flink_tools.run_flink_cli(["list", "-a"], standalone.address, TIMEOUT)
    assert code == 0, err
    assert "No running jobs." in out, out
    # every job the REST API knows (the test above ran one), as Flink's CLI prints it
    for job in get_json(standalone.rest_url + "/jobs/overview")["jobs"]:
        assert f" : {job['jid']} : {job['name']} ({job['state']})" in out, out


def test_a_second_start_in_the_directory_of_a_running_cluster_is_refused(standalone: Standalone) -> None:
    done = sk(standalone.home, "cluster", "start", "--dir", str(standalone.directory), cwd=standalone.directory.parent)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.strip() == (
        f"streamkernel cluster start: a cluster is already running in {standalone.directory} (JobManager pid "
        f"{standalone.pids[0]}, REST {standalone.rest_url}); stop it first with "
        f"`streamkernel cluster stop --dir {standalone.directory}`")
    assert all(_alive(pid) for pid in standalone.pids)


def test_status_then_stop_leaves_no_process_no_pid_file_and_no_registry_entry(standalone: Standalone) -> None:
    status = sk(standalone.home, "cluster", "status", "--dir", str(standalone.directory),
                cwd=standalone.directory.parent)
    assert status.returncode == 0, status.stderr
    assert f"JobManager pid {standalone.pids[0]}: running" in status.stdout
    assert f"REST {standalone.rest_url}" in status.stdout
    assert "TaskManager taskexecutor-1 pid" in status.stdout

    done = sk(standalone.home, "cluster", "stop", "--dir", str(standalone.directory), cwd=standalone.directory.parent)
    assert done.returncode == 0, done.stderr
    assert f"Stopping standalonesession daemon (pid: {standalone.pids[0]})" in done.stdout
    wait_until(lambda: not any(_alive(pid) for pid in standalone.pids), 30,
               message=f"every process of the cluster ({standalone.pids}) to be gone")
    assert list((standalone.directory / "pid").iterdir()) == []
    assert not (standalone.directory / "jobmanager.json").exists()
    # the JobManager told its TaskManagers to shut down (they did not merely lose it)
    for log in (standalone.directory / "log").glob("*taskexecutor-*.log"):
        text = log.read_text()
        assert "stopped (shutdown)" in text and "is gone" not in text, text
    assert list((standalone.home / "clusters").glob("*.secret")) == []
    again = sk(standalone.home, "cluster", "status", "--dir", str(standalone.directory),
               cwd=standalone.directory.parent)
    assert again.returncode == 1 and "no cluster in" in again.stderr


def test_the_parts_alone_and_a_sigkilled_jobmanagers_taskmanagers_exit_by_themselves(tmp_path: Path) -> None:
    home, directory = tmp_path / "home", tmp_path / "cluster"
    started = sk(home, "jobmanager", "start", "--dir", str(directory), "-D", "rest.port=0", cwd=tmp_path)
    assert started.returncode == 0, started.stderr
    cluster = Standalone(directory, home, _rest_url(started.stdout), _pids(started.stdout), started.stdout)
    try:
        assert len(cluster.pids) == 1 and get_json(cluster.rest_url + "/overview")["taskmanagers"] == 0
        for _ in range(2):  # without -m: the JobManager of --dir
            added = sk(home, "taskmanager", "start", "--dir", str(directory), cwd=tmp_path)
            assert added.returncode == 0, added.stderr
            cluster.pids += _pids(added.stdout)
        assert get_json(cluster.rest_url + "/overview")["taskmanagers"] == 2
        os.kill(cluster.pids[0], signal.SIGKILL)
        wait_until(lambda: not any(_alive(pid) for pid in cluster.pids[1:]), 60,
                   message=f"the TaskManagers {cluster.pids[1:]} to exit after their JobManager died")
        for log in (cluster.directory / "log").glob("*taskexecutor-*.log"):
            gone = [line for line in log.read_text().splitlines() if "is gone" in line]
            assert len(gone) == 1 and "(its connection closed)" in gone[0], log.read_text()
        # stop cleans up after a dead cluster: pid files and the registry entry
        done = sk(cluster.home, "cluster", "stop", "--dir", str(cluster.directory), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert list((cluster.directory / "pid").iterdir()) == []
        assert list((cluster.home / "clusters").glob("*.secret")) == []
    finally:
        _kill_all(cluster)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_bad_input_is_one_line_and_exit_code_1(tmp_path: Path) -> None:
    home = tmp_path / "home"
    nothing = sk(home, "cluster", "stop", "--dir", str(tmp_path / "none"), cwd=tmp_path)
    assert nothing.returncode == 1 and nothing.stderr.count("\n") == 1
    assert nothing.stderr.startswith(f"streamkernel cluster stop: no cluster to stop in {tmp_path / 'none'}")

    port = _closed_port()
    nobody = sk(home, "taskmanager", "start", "-m", f"127.0.0.1:{port}", "--dir", str(tmp_path / "tm"), cwd=tmp_path)
    assert nobody.returncode == 1 and nobody.stderr.count("\n") == 1
    assert nobody.stderr.startswith(f"streamkernel taskmanager start: no JobManager answers at http://127.0.0.1:{port}")

    rejected = sk(home, "cluster", "start", "--dir", str(tmp_path / "bad"), "-D", "rest.port=eighty", cwd=tmp_path)
    assert rejected.returncode == 1 and rejected.stderr.count("\n") == 1, rejected.stderr
    assert "exited with code 1: " in rejected.stderr and "'rest.port'" in rejected.stderr, rejected.stderr
    assert list((tmp_path / "bad" / "pid").iterdir()) == []  # the JobManager is gone, and so is its pid file

    malformed = sk(home, "jobmanager", "start", "--dir", str(tmp_path / "bad"), "-D", "rest.port", cwd=tmp_path)
    assert malformed.returncode == 1
    assert malformed.stderr.strip() == "streamkernel jobmanager start: -D 'rest.port': expected key=value (a Flink " \
                                       "configuration entry)"


def test_stop_never_signals_a_pid_that_is_not_one_of_ours(tmp_path: Path) -> None:
    """A pid file whose pid now belongs to another program (the cluster died, the pid was reused)."""
    directory = tmp_path / "cluster"
    (directory / "pid").mkdir(parents=True)
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        (directory / "pid" / "standalonesession-0.pid").write_text(f"{other.pid}\n")
        done = sk(tmp_path / "home", "cluster", "stop", "--dir", str(directory), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert f"No standalonesession daemon (pid: {other.pid}) is running" in done.stdout
        assert other.poll() is None and _alive(other.pid)
        assert list((directory / "pid").iterdir()) == []
    finally:
        other.kill()
        other.wait()


def test_taskmanager_start_m_at_a_server_that_is_no_jobmanager_is_one_line(tmp_path: Path) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        port = server.server_address[1]
        done = sk(tmp_path / "home", "taskmanager", "start", "-m", f"127.0.0.1:{port}", "--dir",
                  str(tmp_path / "tm"), cwd=tmp_path)
    finally:
        server.shutdown()
        server.server_close()
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"streamkernel taskmanager start: http://127.0.0.1:{port}/jobmanager/config "
                                  f"answered HTTP 404: is http://127.0.0.1:{port} a streamkernel JobManager's REST API?")
    assert not (tmp_path / "tm" / "pid").exists() or list((tmp_path / "tm" / "pid").iterdir()) == []
