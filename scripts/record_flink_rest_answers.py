"""Record a real Flink 2.3 session cluster's REST answers as key paths and JSON types.

The oracle of ``tests/runtime/rest/test_flink_rest_fidelity.py``: this script starts a Flink
2.3 session cluster (one JobManager, two TaskManagers of two slots, Java 17) from Flink's own
scripts (``FLINK_HOME``: ``.flink-tools/pyflink``, installed by ``scripts/ensure_flink_tools.sh``),
submits ``scripts/flink_rest_oracle/RestShapeJob.java`` (compiled here with ``javac``: a
rate-limited generator -> rebalance -> map -> keyBy -> a stateful KeyedProcessFunction with
timers -> a discarding sink, checkpoints every 500 ms), waits until it has run a while with
checkpoints completed and metrics fetched, then asks every GET resource Flink's REST API
declares (read from ``flink-dist``'s ``*Headers`` classes by ``ListRestHeaders.java``) with
the job's ids, and writes what each answered: its status, the answer's shape
(``tests/runtime/rest_shapes.py``: key paths with types, no values) and, for metric
resources, the metric ids. Nothing of the answers' values is kept but the ids' names.

Usage (about a minute; needs a JDK 17 with javac, and Flink's tools)::

    FLINK_HOME=.flink-tools/pyflink .venv/bin/python scripts/record_flink_rest_answers.py \\
        [--out tests/runtime/rest/flink_rest_answers.json] [--raw DIR] [--settle 8]

``--raw DIR`` also writes each answer as received (to read what Flink sends). Every process
it starts is stopped by its pid at the end, and its scratch directory removed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Callable, Optional

REPO = Path(__file__).resolve().parents[1]
ORACLE = Path(__file__).resolve().parent / "flink_rest_oracle"
FLINK_VERSION = "2.3.0"
DEFAULT_OUT = REPO / "tests" / "runtime" / "rest" / "flink_rest_answers.json"

sys.path.insert(0, str(REPO / "tests" / "runtime"))  # the walk and the shapes, shared with the test
import rest_walk  # noqa: E402

#: The metric groups Flink names the job's operators by in metric ids (``0.plus_one.numRecordsIn``),
#: with their roles: metric ids are recorded with ``<role>`` in their place.
OPERATOR_GROUPS = {"Source__numbers": "source", "plus_one": "map", "count_per_key": "process",
                   "discard__Writer": "sink"}

def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _java_tool(name: str) -> str:
    java_home = os.environ.get("JAVA_HOME")
    candidate = Path(java_home) / "bin" / name if java_home else None
    found = str(candidate) if candidate is not None and candidate.is_file() else shutil.which(name)
    if found is None:
        sys.exit(f"record_flink_rest_answers: no `{name}` (a JDK 17: apt-get install openjdk-17-jdk-headless)")
    return found


def _flink_home(given: Optional[str]) -> Path:
    home = Path(given or os.environ.get("FLINK_HOME") or REPO / ".flink-tools" / "pyflink")
    if not (home / "lib" / f"flink-dist-{FLINK_VERSION}.jar").is_file():
        sys.exit(f"record_flink_rest_answers: {home} holds no lib/flink-dist-{FLINK_VERSION}.jar; "
                 f"install Flink's tools (bash scripts/ensure_flink_tools.sh) or pass --flink-home")
    return home


def _compile(home: Path, scratch: Path) -> Path:
    """javac the oracle's sources; the job's classes as a jar (for ``flink run``)."""
    classes = scratch / "classes"
    classes.mkdir()
    sources = sorted(str(p) for p in ORACLE.glob("*.java"))
    subprocess.run([_java_tool("javac"), "-d", str(classes), "-cp", str(home / "lib" / "*"), *sources], check=True)
    jar = scratch / "rest-shape-job.jar"
    with zipfile.ZipFile(jar, "w") as archive:
        for path in sorted(classes.glob("RestShapeJob*.class")):
            archive.write(path, path.name)
    return classes


def _declared_get_resources(home: Path, classes: Path) -> list[str]:
    """Every GET template Flink 2.3's REST messages declare (``GET /jobs/:jobid RespClass Headers``)."""
    done = subprocess.run([_java_tool("java"), "-cp", f"{classes}:{home / 'lib' / '*'}", "ListRestHeaders",
                           str(home / "lib" / f"flink-dist-{FLINK_VERSION}.jar")],
                          capture_output=True, text=True, check=True)
    templates = []
    for line in done.stdout.splitlines():
        method, template, *rest = line.split()
        if method == "GET" and len(rest) == 2:  # a JSON response class (files and logs have none)
            templates.append(template)
    return templates


def _write_conf(home: Path, conf: Path, rest_port: int, rpc_port: int) -> None:
    conf.mkdir()
    for name in ("log4j-console.properties", "log4j-cli.properties", "log4j.properties"):
        shutil.copyfile(home / "conf" / name, conf / name)
    # the JVM options Flink's own config.yaml ships (--add-opens ... that Java 17 needs)
    shipped = re.search(r"^\s*all: (--.*)$", (home / "conf" / "config.yaml").read_text(encoding="utf-8"), re.M)
    (conf / "config.yaml").write_text("\n".join([
        f"env.java.opts.all: {shipped.group(1) if shipped else ''}",
        "jobmanager.rpc.address: localhost", f"jobmanager.rpc.port: {rpc_port}", "jobmanager.bind-host: localhost",
        "jobmanager.memory.process.size: 1024m",
        "taskmanager.bind-host: localhost", "taskmanager.host: localhost",
        "taskmanager.memory.process.size: 1280m", "taskmanager.numberOfTaskSlots: 2",
        "taskmanager.load-balance.mode: SLOTS",  # spread the job over both TaskManagers
        "parallelism.default: 2",
        "rest.address: localhost", "rest.bind-address: localhost", f"rest.port: {rest_port}",
        "metrics.fetcher.update-interval: 1000",  # the REST metrics every second (default 10 s)
        "rest.retry.max-attempts: 0", "",
    ]), encoding="utf-8")


class _Cluster:
    """A Flink session cluster's processes (each ``start-foreground``: the JVM is the child)."""

    def __init__(self, home: Path, conf: Path, logs: Path) -> None:
        self.home, self.conf, self.logs = home, conf, logs
        self.processes: list[subprocess.Popen] = []
        self.env = dict(os.environ, FLINK_HOME=str(home), FLINK_CONF_DIR=str(conf), FLINK_LOG_DIR=str(logs),
                        TZ="UTC")

    def start(self, script: str, label: str) -> None:
        out = open(self.logs / f"{label}.out", "wb")  # noqa: SIM115 - closed with the process
        self.processes.append(subprocess.Popen(["bash", str(self.home / "bin" / script), "start-foreground"],
                                               env=self.env, stdout=out, stderr=subprocess.STDOUT))
        out.close()

    def flink(self, *args: str) -> str:
        done = subprocess.run(["bash", str(self.home / "bin" / "flink"), *args], env=self.env, capture_output=True,
                              text=True, timeout=180, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"flink {' '.join(args)} failed: {done.stdout}\n{done.stderr}")
        return done.stdout

    def stop(self) -> None:
        for process in reversed(self.processes):
            if process.poll() is None:
                process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


def _wait(what: str, check: Callable[[], bool], timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.5)


def _reachable(base: str) -> bool:
    try:
        rest_walk.get(base, "/overview")
        return True
    except OSError:
        return False


def _operator_groups(base: str, job_id: str) -> dict[str, str]:
    """:data:`OPERATOR_GROUPS`, once checked against the metric ids Flink shows."""
    plan = rest_walk.get(base, f"/jobs/{job_id}/plan")[1]["plan"]["nodes"]
    ids = [item["id"] for node in plan for item in rest_walk.get(base, f"/jobs/{job_id}/vertices/{node['id']}/metrics")[1]]
    absent = [group for group in OPERATOR_GROUPS if not any(f".{group}." in i for i in ids)]
    if absent:
        raise RuntimeError(f"no metric of the operator groups {absent} (has Flink renamed them?)")
    return dict(OPERATOR_GROUPS)


def record(home: Path, out: Path, raw: Optional[Path], settle: float) -> dict:
    """Start the cluster, run the job, walk the resources; the fixture's content."""
    scratch = Path(tempfile.mkdtemp(prefix="flink-rest-oracle-"))
    rest_port, rpc_port = _free_port(), _free_port()
    base = f"http://localhost:{rest_port}"
    _write_conf(home, scratch / "conf", rest_port, rpc_port)
    (scratch / "log").mkdir()
    cluster = _Cluster(home, scratch / "conf", scratch / "log")
    try:
        classes = _compile(home, scratch)
        templates = _declared_get_resources(home, classes)
        cluster.start("jobmanager.sh", "jobmanager")
        cluster.start("taskmanager.sh", "taskmanager-1")
        cluster.start("taskmanager.sh", "taskmanager-2")
        _wait("two TaskManagers", lambda: _reachable(base) and rest_walk.get(base, "/overview")[1].get("taskmanagers") == 2)
        submitted = cluster.flink("run", "-d", "-c", "RestShapeJob", str(scratch / "rest-shape-job.jar"))
        found = re.search(r"JobID ([0-9a-f]{32})", submitted)
        if found is None:
            raise RuntimeError(f"no job id in `flink run`'s output: {submitted}")
        job_id = found.group(1)

        def ready() -> bool:
            status, body = rest_walk.get(base, f"/jobs/{job_id}/checkpoints")
            details = rest_walk.get(base, f"/jobs/{job_id}")[1]
            return (status == 200 and body["counts"]["completed"] >= 3 and details["state"] == "RUNNING"
                    and all(v["status"] == "RUNNING" for v in details["vertices"]))

        _wait("the job running with three completed checkpoints", ready)
        time.sleep(settle)  # a few metric fetches and backpressure samples
        resources = rest_walk.walk(base, job_id, templates, _operator_groups(base, job_id), raw)
        cluster.flink("cancel", job_id)
        return {"flink_version": FLINK_VERSION,
                "recorded_by": "scripts/record_flink_rest_answers.py",
                "job": "scripts/flink_rest_oracle/RestShapeJob.java: generator (p=2, event time) -> rebalance -> "
                       "map -> keyBy -> KeyedProcessFunction (ValueState, event-time timers) -> discarding sink; "
                       "checkpoints every 500 ms; 1 JobManager, 2 TaskManagers x 2 slots",
                "operator_groups": OPERATOR_GROUPS, "vertex_roles": list(rest_walk.VERTEX_ROLES),
                "unwalked_parameters": rest_walk.UNWALKED, "resources": resources}
    finally:
        cluster.stop()
        shutil.rmtree(scratch, ignore_errors=True)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flink-home", help="FLINK_HOME (default $FLINK_HOME, else .flink-tools/pyflink)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the fixture to write")
    parser.add_argument("--raw", type=Path, help="also write every answer as received into this directory")
    parser.add_argument("--settle", type=float, default=8.0, help="seconds to let the job run once ready")
    args = parser.parse_args(argv)
    if args.raw is not None:
        args.raw.mkdir(parents=True, exist_ok=True)
    fixture = record(_flink_home(args.flink_home), args.out, args.raw, args.settle)
    args.out.write_text(json.dumps(fixture, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    answered = sum(1 for r in fixture["resources"].values() if r["status"] == 200)
    print(f"recorded {len(fixture['resources']) - 1} resources ({answered} answered 200) into {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
