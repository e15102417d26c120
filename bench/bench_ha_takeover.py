"""How long does a highly available cluster take to run its job again after its leader is killed? (issue 18)

Run: ``.venv/bin/python bench/bench_ha_takeover.py [--session-timeout 2] [--repeat 3]``

Each round starts a throwaway ZooKeeper (Debian's ``zookeeper`` package, ``streamkernel.testing.zookeeper``),
two JobManager processes (``streamkernel jobmanager start`` with the HA keys and
``high-availability.zookeeper.client.session-timeout`` lowered as Flink's own tests lower it), one
TaskManager process that follows the leader, and an unbounded job with checkpoints every 200 ms
(``streamkernel run --detached``). Once a checkpoint completed, the leader is SIGKILLed and the clock
runs until:

* ``elected``: the standby's ``jobmanager.json`` says it leads;
* ``running``: the standby's REST API shows the job RUNNING again (recovered from its checkpoint,
  its TaskManager re-registered: the same process).

The baseline, measured in the same round, is what a person does without high availability after
the same kill: start a new JobManager and TaskManager and resubmit the job from its latest
checkpoint (``execution.state-recovery.path``), until the job is RUNNING. The figures are medians
over the rounds; ``ratio`` is takeover / baseline. The floor of a takeover is the session timeout:
ZooKeeper frees the dead leader's latch only once its session expired.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.request
from pathlib import Path
from typing import Any, Callable, Optional

ROOT = Path(__file__).resolve().parents[1]
JOB = textwrap.dedent("""
    import sys
    from streamkernel.common import Types, WatermarkStrategy
    from streamkernel.datastream import StreamExecutionEnvironment
    from streamkernel.testing import FileGate, ScriptedSource

    checkpoints, gate_dir = sys.argv[1:3]
    env = StreamExecutionEnvironment.get_execution_environment()
    env.enable_checkpointing(200)
    env.get_checkpoint_config().set_checkpoint_storage_dir(checkpoints)
    source = ScriptedSource(list(range(100)) + [FileGate(gate_dir, "never")])
    env.from_source(source, WatermarkStrategy.no_watermarks(), "numbers", type_info=Types.INT()) \\
        .map(lambda x: x + 1, output_type=Types.INT()).add_sink(lambda x: None)
    env.execute("takeover bench")
""")


def _sk(home: Path, *args: str) -> str:
    env = dict(os.environ, STREAMKERNEL_HOME=str(home), PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-m", "streamkernel", *args], env=env, capture_output=True, text=True,
                          timeout=180)
    if done.returncode != 0:
        raise SystemExit(f"streamkernel {' '.join(args[:2])} failed: {done.stderr.strip()}")
    return done.stdout


def _get(url: str) -> Optional[dict]:
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return json.loads(answer.read())
    except Exception:  # noqa: BLE001 - not up yet, or gone
        return None


def _wait(condition: Callable[[], Any], what: str, timeout: float = 120.0) -> float:
    start = time.monotonic()
    while not condition():
        if time.monotonic() - start > timeout:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.02)  # a bench polling other processes: nothing to wait on but their answers
    return time.monotonic()


def _pid(output: str) -> int:
    return int(re.search(r"^pid (\d+)", output, re.MULTILINE).group(1))  # type: ignore[union-attr]


def _rest(output: str) -> str:
    return re.search(r"^REST (http://\S+)", output, re.MULTILINE).group(1)  # type: ignore[union-attr]


def _state(rest: str, job_id: str) -> Optional[str]:
    answer = _get(f"{rest}/jobs/{job_id}")
    return answer.get("state") if answer else None


def one_round(work: Path, quorum: str, session_timeout: float, index: int) -> dict[str, float]:
    home, pids = work / "home", []
    ha = {"high-availability.type": "zookeeper", "high-availability.zookeeper.quorum": quorum,
          "high-availability.storageDir": str(work / "ha"), "high-availability.cluster-id": f"/bench-{index}",
          "high-availability.zookeeper.client.session-timeout": f"{session_timeout:g} s", "rest.port": "0"}
    dyn = [a for k, v in ha.items() for a in ("-D", f"{k}={v}")]
    work.mkdir(parents=True, exist_ok=True)
    script = work / "job.py"
    script.write_text(JOB)
    try:
        first = _sk(home, "jobmanager", "start", "--dir", str(work / "jm1"), *dyn)
        pids.append(_pid(first))
        second = _sk(home, "jobmanager", "start", "--dir", str(work / "jm2"), *dyn)
        pids.append(_pid(second))
        pids.append(_pid(_sk(home, "taskmanager", "start", "--dir", str(work / "tm"), "--slots", "2", *dyn)))
        (work / "gate").mkdir(exist_ok=True)
        submitted = _sk(home, "run", "--detached", "-m", _rest(first), str(script), str(work / "cp"),
                        str(work / "gate"))
        job_id = re.search(r"JobID ([0-9a-f]{32})", submitted).group(1)  # type: ignore[union-attr]
        _wait(lambda: ((_get(f"{_rest(first)}/jobs/{job_id}/checkpoints") or {}).get("counts") or {})
              .get("completed", 0) >= 1, "a checkpoint")
        killed = time.monotonic()
        os.kill(pids[0], signal.SIGKILL)
        info = work / "jm2" / "jobmanager.json"
        elected = _wait(lambda: json.loads(info.read_text()).get("high_availability", {}).get("role") == "leader",
                        "the standby to lead")
        running = _wait(lambda: _state(_rest(second), job_id) == "RUNNING", "the recovered job to run")
        _wait(lambda: ((_get(f"{_rest(second)}/jobs/{job_id}/checkpoints") or {}).get("latest") or {})
              .get("completed"), "a checkpoint of the new leader")
        latest = _get(f"{_rest(second)}/jobs/{job_id}/checkpoints")["latest"]["completed"]  # type: ignore[index]
        # the baseline: what a person does without HA after the same kill
        for pid in pids[1:]:
            os.kill(pid, signal.SIGKILL)
        manual_start = time.monotonic()
        third = _sk(home, "jobmanager", "start", "--dir", str(work / "jm3"), "-D", "rest.port=0")
        pids.append(_pid(third))
        pids.append(_pid(_sk(home, "taskmanager", "start", "--dir", str(work / "tm3"), "--slots", "2", "-m",
                             _rest(third).removeprefix("http://"))))
        again = _sk(home, "run", "--detached", "-m", _rest(third), "-D",
                    f"execution.state-recovery.path={latest.get('external_path')}", str(script), str(work / "cp"),
                    str(work / "gate"))
        job2 = re.search(r"JobID ([0-9a-f]{32})", again).group(1)  # type: ignore[union-attr]
        manual = _wait(lambda: _state(_rest(third), job2) == "RUNNING", "the resubmitted job to run")
        return {"elected": elected - killed, "running": running - killed, "baseline": manual - manual_start}
    finally:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--session-timeout", type=float, default=2.0, help="seconds (Flink's default is 60)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from streamkernel.testing import zookeeper as kit

    reason = kit.zookeeper_missing_reason()
    if reason is not None:
        raise SystemExit(reason)
    with tempfile.TemporaryDirectory(prefix="bench-ha-") as tmp:
        server = kit.ZooKeeperServer(Path(tmp) / "zookeeper").start()
        try:
            rounds = [one_round(Path(tmp) / f"round-{i}", server.connect_string, args.session_timeout, i)
                      for i in range(args.repeat)]
        finally:
            server.close()
    for name in ("elected", "running", "baseline"):
        values = [r[name] for r in rounds]
        print(f"{name:>9}: median {statistics.median(values):6.2f} s   "
              f"({', '.join(f'{v:.2f}' for v in values)})")
    takeover, baseline = (statistics.median(r[k] for r in rounds) for k in ("running", "baseline"))
    print(f"session timeout {args.session_timeout:g} s; kill -> job RUNNING again {takeover:.2f} s "
          f"(target < 10 s); ratio to the manual restart {takeover / baseline:.2f}")


if __name__ == "__main__":
    main()
