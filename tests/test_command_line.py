"""The ``streamkernel`` command: ``run`` (as ``flink run``) and ``install-kernel`` (a Jupyter kernelspec).

Every call runs the real command in a subprocess of this venv's python.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

JOB = textwrap.dedent("""
    import os, sys
    from streamkernel.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    if "--own-parallelism" in sys.argv:
        env.set_parallelism(1)  # the program's own setting wins over -p, as in Flink
    print("parallelism", env.get_parallelism(), "max", env.get_max_parallelism(), "args", sys.argv[1:])
    counts = (env.from_collection(["a b", "b c", "c c"]).flat_map(str.split)
              .map(lambda w: (w, 1, os.getpid())).key_by(lambda t: t[0])
              .reduce(lambda a, b: (a[0], a[1] + b[1], b[2])))
    rows = list(counts.execute_and_collect("cli job"))
    print("finals", sorted({w: n for w, n, _ in sorted(rows, key=lambda r: r[1])}.items()))
    print("in this process:", all(pid == os.getpid() for _, _, pid in rows))
    if "--fail" in sys.argv:
        raise ValueError("the job script failed on purpose")
    if "--exit" in sys.argv:
        sys.exit(3)
""")


def _command(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("STREAMKERNEL_CONFIGURATION", None)
    env.pop("STREAMKERNEL_BACKEND", None)
    return subprocess.run([sys.executable, "-m", "streamkernel", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture
def job(tmp_path: Path) -> Path:
    path = tmp_path / "job.py"
    path.write_text(JOB)
    return path


def test_run_hands_parallelism_configuration_and_arguments_to_the_script(job: Path) -> None:
    done = _command("run", str(job), "-p", "3", "-D", "pipeline.max-parallelism=64", "--", "x", "-p", "9",
                    cwd=job.parent)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "parallelism 3 max 64 args ['x', '-p', '9']"  # after --: the script's own arguments
    assert lines[1] == "finals [('a', 1), ('b', 2), ('c', 3)]"
    assert lines[2] == "in this process: True"  # the default local backend: threads of this process


def test_options_may_come_before_the_script_and_the_scripts_own_parallelism_wins(job: Path) -> None:
    done = _command("run", "-p", "4", str(job), "--own-parallelism", cwd=job.parent)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "parallelism 1 max -1 args ['--own-parallelism']"


def test_run_on_process_taskmanagers_of_a_cluster_started_for_the_script(job: Path) -> None:
    done = _command("run", str(job), "-p", "2", "--backend", "process", "--taskmanagers", "2", "--slots", "1",
                    cwd=job.parent)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1:] == ["finals [('a', 1), ('b', 2), ('c', 3)]", "in this process: False"]


def test_a_failing_script_exits_1_with_its_traceback_and_sys_exit_codes_pass_through(job: Path) -> None:
    failed = _command("run", str(job), "--fail", cwd=job.parent)
    assert failed.returncode == 1
    assert "ValueError: the job script failed on purpose" in failed.stderr and "Traceback" in failed.stderr
    assert _command("run", str(job), "--exit", cwd=job.parent).returncode == 3


def test_bad_options_and_a_missing_script_exit_2_naming_the_problem(job: Path) -> None:
    missing = _command("run", str(job.parent / "nope.py"), cwd=job.parent)
    assert missing.returncode == 2 and "no such script" in missing.stderr and "nope.py" in missing.stderr
    bad_p = _command("run", str(job), "-p", "0", cwd=job.parent)
    assert bad_p.returncode == 2 and "expected a positive integer, got 0" in bad_p.stderr
    bad_d = _command("run", str(job), "-D", "no-equals-sign", cwd=job.parent)
    assert bad_d.returncode == 2 and "-D 'no-equals-sign': expected KEY=VALUE" in bad_d.stderr


def test_detached_returns_at_once_and_the_script_writes_its_log(job: Path) -> None:
    log = job.parent / "job.log"
    started = time.monotonic()
    done = _command("run", "--detached", str(job), "--log", str(log), "-p", "2", cwd=job.parent)
    assert done.returncode == 0, done.stderr
    assert "runs in the background: pid" in done.stdout and str(log) in done.stdout
    pid = int(done.stdout.split("pid ")[1].split(",")[0])
    deadline = started + 60
    while time.monotonic() < deadline and "in this process" not in (log.read_text() if log.exists() else ""):
        time.sleep(0.1)
    assert log.read_text().splitlines()[:2] == ["parallelism 2 max -1 args []",
                                                "finals [('a', 1), ('b', 2), ('c', 3)]"]
    while time.monotonic() < deadline and os.path.exists(f"/proc/{pid}") and "zombie" not in _state(pid):
        time.sleep(0.1)
    assert not os.path.exists(f"/proc/{pid}") or "zombie" in _state(pid)  # it ended by itself


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/status").read_text().split("State:")[1].split("\n")[0].lower()
    except (OSError, IndexError):
        return "gone"


def test_install_kernel_writes_a_kernelspec_whose_kernel_has_the_magics_and_env(tmp_path: Path, monkeypatch) -> None:
    done = _command("install-kernel", "--prefix", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    spec_dir = tmp_path / "share" / "jupyter" / "kernels" / "streamkernel"
    spec = json.loads((spec_dir / "kernel.json").read_text())
    assert spec["display_name"] == "Python 3 (streamkernel)" and spec["language"] == "python"
    assert spec["argv"][0] == sys.executable and spec["argv"][-1] == "--ext=streamkernel"
    # start the kernel as Jupyter would, from the installed spec, and use it
    from jupyter_client.manager import KernelManager

    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "share" / "jupyter"))  # where Jupyter finds kernelspecs
    # Over IPC, in a directory of its own: TCP ports picked by jupyter_client (bound, closed, then handed to
    # the kernel) can be taken meanwhile by another test worker ("Address already in use"). The directory is
    # short: a socket's path has at most 107 bytes.
    sockets = Path(tempfile.mkdtemp(prefix="sk-kernel-", dir="/tmp"))
    manager = KernelManager(kernel_name="streamkernel", transport="ipc", ip=str(sockets / "kernel"))
    assert manager.kernel_spec.resource_dir == str(spec_dir)
    manager.start_kernel()
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=60)
        info = manager.get_connection_info()
        assert info["transport"] == "ipc" and Path(f"{info['ip']}-{info['shell_port']}").is_socket()
        outputs: list[str] = []

        def keep(message: dict) -> None:
            content = message["content"]
            if message["msg_type"] == "stream":
                outputs.append(content["text"])
            elif message["msg_type"] == "error":
                outputs.append(f"{content['ename']}: {content['evalue']}")

        client.execute_interactive("print(type(env).__name__)\n%flink help", timeout=60, output_hook=keep)
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
        shutil.rmtree(sockets, ignore_errors=True)
    text = "".join(outputs)
    assert text.startswith("StreamExecutionEnvironment\n")  # env is bound without %load_ext
    assert "%flink SUBCOMMAND" in text and "kill-taskmanager" in text  # the magics are loaded


def test_install_kernel_refuses_two_places_at_once(tmp_path: Path) -> None:
    done = _command("install-kernel", "--user", "--sys-prefix", cwd=tmp_path)
    assert done.returncode == 2 and "not allowed with argument" in done.stderr
