"""A highly available standalone cluster of real processes (issue 18): two JobManager processes
(`streamkernel jobmanager start` with the HA keys: one leads, one is a standby), a TaskManager
process that finds the leader through ZooKeeper, an exactly-once job submitted with `streamkernel
run`. The leader is SIGKILLed while the job runs: the standby takes over, recovers the job from its
latest completed checkpoint, the same TaskManager process re-registers with it, checkpoint ids
continue, and the FileSink's committed output equals a failure-free run."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Iterator

import pytest
from ha_testkit import ha_config, wait_until

TIMEOUT = 120.0
RECORDS = [f"r{i:03d}" for i in range(60)]

GATED_JOB = textwrap.dedent("""
    import sys
    from streamkernel.common import Types, WatermarkStrategy
    from streamkernel.common.serialization import Encoder
    from streamkernel.datastream import StreamExecutionEnvironment
    from streamkernel.datastream.connectors import FileSink, RollingPolicy
    from streamkernel.testing import FileGate, ScriptedSource

    out, checkpoints, gate_dir = sys.argv[1:4]
    records = [f"r{i:03d}" for i in range(60)]
    env = StreamExecutionEnvironment.get_execution_environment()
    env.enable_checkpointing(200)
    env.get_checkpoint_config().set_checkpoint_storage_dir(checkpoints)
    source = ScriptedSource([*records[:30], FileGate(gate_dir, "half"), *records[30:]])
    stream = env.from_source(source, WatermarkStrategy.no_watermarks(), "records", type_info=Types.STRING())
    sink = (FileSink.for_row_format(out, Encoder.simple_string_encoder())
            .with_rolling_policy(RollingPolicy.default_rolling_policy(part_size=64)).build())
    stream.set_parallelism(1).map(lambda r: r.upper(), output_type=Types.STRING()).sink_to(sink)
    env.execute("gated job on a highly available cluster")
""")


def _environment(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("STREAMKERNEL_CONFIGURATION", "STREAMKERNEL_CLUSTER_SECRET", "STREAMKERNEL_SECRET_FILE",
                        "STREAMKERNEL_BACKEND")}
    env["STREAMKERNEL_HOME"] = str(home)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(Path(__file__).parents[3]), env.get("PYTHONPATH")) if p)
    return env


def sk(home: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """``streamkernel ARGS`` as a shell runs it."""
    return subprocess.run([sys.executable, "-m", "streamkernel", *args], cwd=cwd, env=_environment(home),
                          capture_output=True, text=True, timeout=TIMEOUT)


def get_json(url: str) -> Any:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return json.loads(response.read().decode("utf-8"))
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return None


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def committed(out: Path) -> list[str]:
    return sorted(line for f in out.rglob("*") if f.is_file() and not f.name.startswith(".")
                  for line in f.read_text().splitlines())


def dynamic(conf: dict[str, str]) -> list[str]:
    return [arg for key, value in conf.items() for arg in ("-D", f"{key}={value}")]


@pytest.fixture
def processes() -> Iterator[list[int]]:
    """The pids a test started; any still alive afterwards is killed (a failed test's leftovers)."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


def start_jobmanager(home: Path, tmp: Path, name: str, conf: dict[str, str], processes: list[int]) -> dict:
    done = sk(home, tmp, "jobmanager", "start", "--dir", str(tmp / name), "-D", "rest.port=0", *dynamic(conf))
    assert done.returncode == 0, done.stderr
    pid = int(re.search(r"^pid (\d+)", done.stdout, re.MULTILINE).group(1))
    processes.append(pid)
    rest = re.search(r"^REST (http://\S+)", done.stdout, re.MULTILINE).group(1)
    return {"pid": pid, "rest": rest, "output": done.stdout}


def test_kill_9_of_the_leader_the_standby_recovers_the_job_exactly_once(zookeeper: Any, tmp_path: Path,
                                                                         processes: list[int]) -> None:
    home = tmp_path / "home"
    conf = ha_config(zookeeper, tmp_path / "ha")
    leader = start_jobmanager(home, tmp_path, "jm1", conf, processes)
    assert "this JobManager is the leader" in leader["output"], leader["output"]
    standby = start_jobmanager(home, tmp_path, "jm2", conf, processes)
    assert f"standby (leader: {leader['rest']})" in standby["output"], standby["output"]

    started = sk(home, tmp_path, "taskmanager", "start", "--dir", str(tmp_path / "tm"), "--slots", "2",
                 *dynamic(conf))
    assert started.returncode == 0, started.stderr
    tm_pid = int(re.search(r"^pid (\d+)", started.stdout, re.MULTILINE).group(1))
    processes.append(tm_pid)

    script = tmp_path / "job.py"
    script.write_text(GATED_JOB)
    out, gate = tmp_path / "out", tmp_path / "gate"
    gate.mkdir()
    run = sk(home, tmp_path, "run", "--detached", "-m", leader["rest"], str(script), str(out),
             str(tmp_path / "checkpoints"), str(gate))
    assert run.returncode == 0, run.stderr
    job_id = re.search(r"JobID ([0-9a-f]{32})", run.stdout).group(1)

    def checkpoints(rest: str) -> dict:
        return get_json(f"{rest}/jobs/{job_id}/checkpoints") or {}

    wait_until(lambda: (gate / "half.reached").exists()
               and (checkpoints(leader["rest"]).get("counts") or {}).get("completed", 0) >= 2,
               "the job holds at its gate with two checkpoints completed")
    before = [c["id"] for c in checkpoints(leader["rest"])["history"] if c["status"] == "COMPLETED"]

    killed_at = time.monotonic()
    os.kill(leader["pid"], signal.SIGKILL)
    wait_until(lambda: (get_json(f"{standby['rest']}/jobs/{job_id}") or {}).get("state") == "RUNNING"
               and json.loads((tmp_path / "jm2" / "jobmanager.json").read_text())["high_availability"]["role"]
               == "leader", "the standby leads and runs the recovered job", timeout=TIMEOUT)
    takeover_s = time.monotonic() - killed_at
    taskmanagers = get_json(f"{standby['rest']}/taskmanagers")["taskmanagers"]
    assert alive(tm_pid) and len(taskmanagers) == 1, taskmanagers
    restored = checkpoints(standby["rest"]).get("latest", {}).get("restored") or {}
    # the latest checkpoint the old leader completed (at least the last one seen before the kill)
    assert restored.get("id", 0) >= max(before), (restored, before)

    def completed_after_takeover() -> list[int]:
        return [c["id"] for c in checkpoints(standby["rest"]).get("history", []) if c["status"] == "COMPLETED"]

    wait_until(completed_after_takeover, "the new leader completes a checkpoint")
    after = completed_after_takeover()
    assert min(after) > restored["id"], (restored, after)  # ids continue: none is reused

    (gate / "half.open").touch()
    wait_until(lambda: (get_json(f"{standby['rest']}/jobs/{job_id}") or {}).get("state") == "FINISHED",
               "the recovered job finishes", timeout=TIMEOUT)
    assert committed(out) == sorted(r.upper() for r in RECORDS)
    assert takeover_s < 60, f"takeover took {takeover_s:.1f} s"

    for name in ("tm", "jm2"):
        command = "taskmanager" if name == "tm" else "jobmanager"
        stopped = sk(home, tmp_path, command, "stop", "--dir", str(tmp_path / name))
        assert stopped.returncode == 0, stopped.stderr
    wait_until(lambda: not any(alive(pid) for pid in processes), "every process of the cluster is gone")


def test_jobmanager_start_refuses_a_bad_high_availability_setup_in_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    base = ["jobmanager", "start", "--dir", str(tmp_path / "jm"), "-D", "high-availability.type=zookeeper"]
    cases = {
        "storageDir": (["-D", "high-availability.zookeeper.quorum=127.0.0.1:1",
                        "-D", f"high-availability.storageDir={blocker}/ha"],
                       "Invalid value '%s/ha' for key 'high-availability.storageDir'" % blocker),
        "quorum": (["-D", f"high-availability.storageDir={tmp_path / 'ha'}"],
                   "needs 'high-availability.zookeeper.quorum'"),
        "unreachable": (["-D", "high-availability.zookeeper.quorum=127.0.0.1:1",
                         "-D", f"high-availability.storageDir={tmp_path / 'ha'}",
                         "-D", "high-availability.zookeeper.client.connection-timeout=1 s"],
                        "Could not connect to the ZooKeeper quorum '127.0.0.1:1'"),
    }
    for name, (extra, message) in cases.items():
        done = sk(tmp_path / "home", tmp_path, *base, *extra)
        assert done.returncode == 1 and message in done.stderr, (name, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1, (name, done.stderr)


def test_stopping_the_leader_leaves_its_taskmanagers_to_the_standby(zookeeper: Any, tmp_path: Path,
                                                                    processes: list[int]) -> None:
    """`jobmanager stop` of a leader (SIGTERM): its TaskManager is not shut down with it (as
    Flink's are not); it registers with the standby, in the same process."""
    home = tmp_path / "home"
    conf = ha_config(zookeeper, tmp_path / "ha")
    start_jobmanager(home, tmp_path, "jm1", conf, processes)
    standby = start_jobmanager(home, tmp_path, "jm2", conf, processes)
    started = sk(home, tmp_path, "taskmanager", "start", "--dir", str(tmp_path / "tm"), *dynamic(conf))
    assert started.returncode == 0, started.stderr
    tm_pid = int(re.search(r"^pid (\d+)", started.stdout, re.MULTILINE).group(1))
    processes.append(tm_pid)
    stopped = sk(home, tmp_path, "jobmanager", "stop", "--dir", str(tmp_path / "jm1"))
    assert stopped.returncode == 0, stopped.stderr
    wait_until(lambda: len((get_json(f"{standby['rest']}/taskmanagers") or {}).get("taskmanagers", [])) == 1
               and json.loads((tmp_path / "jm2" / "jobmanager.json").read_text())["high_availability"]["role"]
               == "leader", "the standby leads and the TaskManager registered there")
    assert alive(tm_pid)
    for command, name in (("taskmanager", "tm"), ("jobmanager", "jm2")):
        assert sk(home, tmp_path, command, "stop", "--dir", str(tmp_path / name)).returncode == 0
    wait_until(lambda: not any(alive(pid) for pid in processes), "every process of the cluster is gone")
