"""The engine logs to the cluster's log file, not to the program's logger (issue 31).

A PyFlink program that calls ``logging.basicConfig(stream=sys.stdout, level=logging.INFO)`` (as
PyFlink's own examples do) prints what it printed under PyFlink: its own lines, not the
engine's; a failing user function still reaches its logger, as one WARNING line.
"""

from __future__ import annotations

import logging
import os
import re
import socket
import subprocess
import sys
import textwrap
import urllib.error
import urllib.request
from pathlib import Path
from typing import Iterator

import pytest

from streamkernel.common import Configuration
from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.runtime.core.engine_log import CONCERNS_USER, ENGINE_LOGGER
from streamkernel.runtime.minicluster.minicluster import MiniCluster
from streamkernel.runtime.minicluster.cluster_log import prune_log_files

REPO = Path(__file__).resolve().parents[3]
TIMEOUT_S = 180  # the program takes a second or two; a loaded machine can be many times slower

PROGRAM = textwrap.dedent("""
    import logging, sys
    logging.basicConfig(stream=sys.stdout, level=logging.INFO)
    from streamkernel.common import Configuration
    from streamkernel.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment(Configuration.from_dict({
        "restart-strategy.type": "fixed-delay", "restart-strategy.fixed-delay.attempts": "1",
        "restart-strategy.fixed-delay.delay": "0 ms"}))
    env.set_parallelism(1)
    env.from_collection([1, 2]).map(lambda x: 10 // x).print()
    env.execute("fine")

    failed = []
    def fails_once(x):  # TaskManager threads of this process: the list is shared
        if x == 0 and not failed:
            failed.append(x)
            raise RuntimeError("the first attempt fails")
        return x
    env.from_collection([1, 0]).map(fails_once).print()
    env.execute("recovers")

    env = StreamExecutionEnvironment.get_execution_environment(Configuration.from_dict({"restart-strategy.type": "none"}))
    env.set_parallelism(1)
    env.from_collection([1, 0]).map(lambda x: 10 // x).print()
    try:
        env.execute("divides by zero")
    except Exception as error:
        print("caught", type(error).__name__)
    logging.getLogger("my.program").info("the program's own line")
""")


@pytest.fixture(scope="module")
def program_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess, Path]:
    """The program above, run as a user runs it; its STREAMKERNEL_HOME (where the log files go)."""
    home = tmp_path_factory.mktemp("home")
    script = home / "program.py"
    script.write_text(PROGRAM)
    env = dict(os.environ, STREAMKERNEL_HOME=str(home), PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, str(script)], cwd=home, env=env, capture_output=True, text=True,
                          timeout=TIMEOUT_S)
    assert done.returncode == 0, done.stderr
    return done, home


def test_a_program_logging_info_to_stdout_prints_no_engine_line(program_run) -> None:
    done, _ = program_run
    lines = done.stdout.splitlines()
    assert "INFO:my.program:the program's own line" in lines
    assert "caught JobExecutionError" in lines
    assert not [line for line in lines if line.startswith("INFO:streamkernel")], done.stdout
    assert "jvm overhead memory" not in done.stdout
    assert "Traceback" not in done.stdout + done.stderr  # the trace is in the log file


def test_a_failing_user_function_reaches_the_programs_logger_as_one_warning_per_job_failure(program_run) -> None:
    done, _ = program_run
    warnings = [line for line in done.stdout.splitlines() if line.startswith("WARNING:streamkernel")]
    assert len(warnings) == 2, done.stdout
    restart, failure = warnings
    assert re.fullmatch(r"WARNING:streamkernel\.runtime\.jobmaster:Job 'recovers' \([0-9a-f]{32}\) switched from state "
                        r"RUNNING to RESTARTING: UserFunctionError: operator 'Map' \(subtask .*\) failed on record 0: "
                        r"RuntimeError: the first attempt fails", restart), restart
    assert re.fullmatch(r"WARNING:streamkernel\.runtime\.jobmaster:Job 'divides by zero' \([0-9a-f]{32}\) switched from "
                        r"state (RUNNING|FAILING) to FAILED: UserFunctionError: operator 'Map' \(subtask .*\) failed on "
                        r"record 0: ZeroDivisionError: integer division or modulo by zero", failure), failure


def test_the_clusters_log_files_hold_the_engine_lines_and_the_trace(program_run) -> None:
    _, home = program_run
    files = sorted((home / "log").glob("streamkernel-*-minicluster-*.log"), key=lambda p: int(p.name.split("-")[-2]))
    assert len(files) == 3  # one per transient cluster, one per execute()
    fine, recovers, failing = (path.read_text() for path in files)
    assert "INFO  streamkernel.runtime.memory.fractions" in fine and "min value will be used instead" in fine
    assert "Job 'fine' (" in fine and "switched from state RUNNING to FINISHED." in fine
    assert "switched from RUNNING to FAILED with failure cause: UserFunctionError" in recovers
    assert "switched from state RESTARTING to RUNNING." in recovers
    assert "Traceback (most recent call last)" in failing and "10 // x" in failing


@pytest.fixture
def engine_logger() -> Iterator[logging.Logger]:
    """The ``streamkernel`` logger, its level and handlers put back afterwards."""
    logger = logging.getLogger(ENGINE_LOGGER)
    level, handlers = logger.level, list(logger.handlers)
    yield logger
    logger.setLevel(level)
    logger.handlers[:] = handlers


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_while_a_cluster_runs_only_records_for_the_user_propagate(tmp_path: Path, engine_logger) -> None:
    root, seen = logging.getLogger(), _Records()
    root.addHandler(seen)
    engine = logging.getLogger("streamkernel.runtime.some_component")
    try:
        with MiniCluster(1, 1, backend="local", configuration={"log.file": str(tmp_path / "jm.log")}) as cluster:
            assert engine_logger.propagate is False and engine_logger.level == logging.INFO
            engine.info("internal progress")
            engine.warning("an internal hiccup")
            engine.warning("your checkpoint directory is full", extra=CONCERNS_USER)
            assert cluster.log_file == tmp_path / "jm.log"
        assert engine_logger.propagate is True and engine_logger.level == logging.NOTSET  # given back
    finally:
        root.removeHandler(seen)
    assert [r.getMessage() for r in seen.records if r.name.startswith("streamkernel")] == [
        "your checkpoint directory is full"]
    text = (tmp_path / "jm.log").read_text()
    assert "internal progress" in text and "an internal hiccup" in text and "your checkpoint directory" in text


def test_a_level_the_user_set_on_the_engine_logger_is_kept(tmp_path: Path, engine_logger) -> None:
    engine_logger.setLevel(logging.ERROR)  # as notebooks 04-06 silence the engine
    with MiniCluster(1, 1, backend="local", configuration={"log.file": str(tmp_path / "jm.log")}):
        assert engine_logger.level == logging.ERROR
        logging.getLogger("streamkernel.x").warning("below the user's level", extra=CONCERNS_USER)
    assert engine_logger.level == logging.ERROR
    assert "below the user's level" not in (tmp_path / "jm.log").read_text()


def test_the_in_kernel_clusters_log_endpoints_serve_its_log_file(tmp_path: Path) -> None:
    conf = {"rest.port": "0", "env.log.dir": str(tmp_path)}
    with MiniCluster(1, 1, backend="local", configuration=conf) as cluster:
        assert cluster.rest_url is not None and cluster.log_file is not None
        assert cluster.log_file.parent == tmp_path and cluster.log_file.name.startswith("streamkernel-")
        env = StreamExecutionEnvironment.get_execution_environment(Configuration())
        env.set_parallelism(1)
        env.from_collection([1, 2]).map(str).add_sink(lambda v: None)
        env.execute("logged")

        def get(path: str) -> str:
            with urllib.request.urlopen(cluster.rest_url + path, timeout=30) as answer:
                return answer.read().decode()

        log = get("/jobmanager/log")
        assert "Starting MiniCluster: backend local" in log and "Job 'logged' (" in log
        assert log == cluster.jobmanager_log()
        assert get("/taskmanagers/taskmanager-1/log") == get("/jobmanager/log")  # threads of the same process
        assert cluster.log_file.name in get("/jobmanager/logs")
        with pytest.raises(urllib.error.HTTPError) as error:
            get("/jobmanager/stdout")  # the cluster's output is the notebook's
        assert error.value.code == 404


def test_pruning_keeps_the_newest_files_and_those_of_live_processes(tmp_path: Path) -> None:
    host = re.sub(r"[^A-Za-z0-9._]", "_", socket.gethostname())
    dead = 2 ** 22 + 12345  # above pid_max on Linux: never a live process
    paths = []
    for n in range(5):
        path = tmp_path / f"streamkernel-u-minicluster-{dead}-{n}-{host}.log"
        path.write_text("x")
        os.utime(path, (1000 + n, 1000 + n))
        paths.append(path)
    mine = tmp_path / f"streamkernel-u-minicluster-{os.getpid()}-1-{host}.log"
    mine.write_text("x")
    os.utime(mine, (10, 10))  # the oldest, but its process runs
    assert sorted(prune_log_files(tmp_path, keep=2)) == sorted(paths[:3])
    assert sorted(tmp_path.iterdir()) == sorted([*paths[3:], mine])


def test_a_log_file_that_cannot_be_written_leaves_the_engine_logging_to_the_program(tmp_path: Path,
                                                                                   engine_logger) -> None:
    (tmp_path / "a file").write_text("not a directory")
    conf = {"env.log.dir": str(tmp_path / "a file" / "log")}
    root, seen = logging.getLogger(), _Records()
    root.addHandler(seen)
    try:
        with MiniCluster(1, 1, backend="local", configuration=conf) as cluster:
            assert cluster.log_file is None and engine_logger.propagate is True
    finally:
        root.removeHandler(seen)
    warnings = [r.getMessage() for r in seen.records if r.levelno == logging.WARNING]
    assert any(m.startswith("the cluster cannot write its log file") and "env.log.dir" in m for m in warnings)
