"""``%flink connect`` / ``%flink disconnect``: the notebook as a client of a cluster running in another process.

A session cluster (``MiniCluster(1, 2, backend="process", rest=True)``) runs in a separate
process started by the test, its secret under a temporary ``STREAMKERNEL_HOME``. A notebook
(IPython with the extension) connects, submits a job defined in a cell, sees it RUNNING with
its checkpoints, metrics and slots, takes a savepoint and disconnects: the job runs on. A
second notebook (another process, as a restarted kernel) connects, finds the job and cancels
it. Bad addresses and secrets are one-line errors that leave nothing half-connected.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Iterator

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from streamkernel.common.job_status import JobStatus
from streamkernel.runtime.rest.client import RestClusterClient, parse_address
from streamkernel.runtime.rest.cluster_secret import HOME_ENV, SECRET_ENV, SECRET_FILE_ENV
from streamkernel.testing.waiting import wait_until

REPOSITORY = Path(__file__).resolve().parents[2]

CLUSTER = textwrap.dedent("""
    import sys
    from streamkernel.runtime.minicluster.minicluster import MiniCluster
    cluster = MiniCluster(1, 2, backend="process", rest=True, configuration={"rest.port": "0"}).start()
    print(cluster.rest_url, flush=True)
    sys.stdin.read()  # until the test closes our stdin
    cluster.stop()
""")

JOB_CELL = textwrap.dedent("""
    from streamkernel.common.watermark_strategy import WatermarkStrategy
    from streamkernel.datastream.connectors import DataGeneratorSource

    def shifted(x):  # defined in the notebook: travels to the cluster by value
        return x + 1000

    env.set_parallelism(2)  # the cluster has 2 slots, whatever this machine's cores
    env.enable_checkpointing(200)
    env.from_source(DataGeneratorSource(lambda i: i, None, 100), WatermarkStrategy.no_watermarks(), "numbers") \\
        .uid("numbers").map(shifted).uid("shifted").add_sink(lambda x: None)
""")

SECOND_NOTEBOOK = textwrap.dedent("""
    import sys
    from IPython.core.interactiveshell import InteractiveShell
    from streamkernel.jupyter import magics

    shown = []
    magics.display = shown.append
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "streamkernel")
    ip.run_line_magic("flink", "connect " + sys.argv[1])
    ip.run_line_magic("flink", "jobs")
    print("JOBS", shown[-1].to_dict("records"))
    ip.run_line_magic("flink", "cancel " + sys.argv[2])
    ip.run_line_magic("flink", "disconnect")
""")


def _python_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in (SECRET_ENV, SECRET_FILE_ENV)}
    env.update({HOME_ENV: str(home), "PYTHONPATH": os.pathsep.join([str(REPOSITORY), env.get("PYTHONPATH", "")])})
    return env


class ClusterProcess:
    """A session cluster in a process of its own; ``stop()`` ends it (closing its stdin), at the latest
    when the test ends."""

    def __init__(self, process: "subprocess.Popen[str]", url: str) -> None:
        self.process = process
        self.url = url

    def stop(self) -> None:
        """End the cluster's process and wait for it (killed if it does not end within a minute)."""
        if self.process.stdin is not None and not self.process.stdin.closed:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@pytest.fixture
def cluster_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ClusterProcess]:
    """A session cluster running in another process (stopped afterwards)."""
    home = tmp_path / "home"
    monkeypatch.setenv(HOME_ENV, str(home))
    for name in (SECRET_ENV, SECRET_FILE_ENV):
        monkeypatch.delenv(name, raising=False)
    process = subprocess.Popen([sys.executable, "-c", CLUSTER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=_python_env(home))
    running = ClusterProcess(process, "")
    try:
        assert process.stdout is not None
        running.url = process.stdout.readline().strip()
        assert running.url.startswith("http://"), f"the cluster process printed no REST URL: {process.stderr.read()}"
        yield running
    finally:
        running.stop()


@pytest.fixture
def remote(cluster_process: ClusterProcess) -> str:
    """The REST URL of a session cluster running in another process."""
    return cluster_process.url


def usage_error(ip: InteractiveShell, line: str, match: str) -> str:
    """Run ``%flink line``; it must raise a one-line UsageError matching ``match``."""
    with pytest.raises(UsageError, match=match) as caught:
        ip.run_line_magic("flink", line)
    message = str(caught.value)
    assert "\n" not in message and "Traceback" not in message
    return message


def _not_connected(ip: InteractiveShell) -> None:
    usage_error(ip, "disconnect", "not connected to a cluster")
    assert "execution.target" not in ip.user_ns["env"].to_configuration_dict()
    assert "STREAMKERNEL_CONFIGURATION" not in os.environ and SECRET_ENV not in os.environ


def test_connect_submit_savepoint_disconnect_and_a_second_notebook_cancels(shell, remote, tmp_path, capsys) -> None:
    ip, shown = shell
    host, port = parse_address(remote)
    rest = RestClusterClient(host, port)
    ip.run_line_magic("flink", f"connect {remote}")
    assert f"Connected to the cluster at {remote} (0 job(s), 0 running)" in capsys.readouterr().out
    assert ip.user_ns["cluster"].rest_url == remote

    ip.run_cell_magic("flink", "--submit --show none --name shifted-numbers", JOB_CELL)
    job_id = str(ip.user_ns["job"].get_job_id())
    assert [j["id"] for j in rest.list_jobs()] == [job_id]  # submitted to the remote cluster, not in the kernel
    wait_until(lambda: rest.get_job_status(job_id) == JobStatus.RUNNING, message="the job to be RUNNING")

    ip.run_line_magic("flink", "jobs")
    assert shown[-1][["job_id", "name", "status"]].to_dict("records") == [
        {"job_id": job_id, "name": "shifted-numbers", "status": "RUNNING"}]

    # checkpoints appear (REST /jobs/:id/checkpoints), with the per-subtask acknowledgements
    def checkpoint_table() -> bool:
        shown.clear()
        ip.run_line_magic("flink", "checkpoints")
        return bool(shown) and "COMPLETED" in list(shown[0]["status"])
    wait_until(checkpoint_table, message="a completed checkpoint in %flink checkpoints")
    assert set(shown[0]["type"]) == {"checkpoint"} and len(shown) == 2
    vertices = ip.user_ns["cluster"].get_job(job_id).get_job_details().vertices
    assert len(shown[1]) == sum(v.parallelism for v in vertices)  # one acknowledgement per subtask
    assert set(shown[1]["checkpoint"]) == {max(c for c, s in zip(shown[0]["id"], shown[0]["status"])
                                               if s == "COMPLETED")}

    # metrics per subtask, from the subtasks' REST metrics
    def records_out() -> int:
        ip.run_line_magic("flink", "metrics")
        return int(shown[-1]["records_out"].sum())
    wait_until(records_out, message="records counted by %flink metrics")
    ip.run_line_magic("flink", "slots")
    assert "shifted-numbers" in capsys.readouterr().out
    ip.run_line_magic("flink", "dashboard")  # text in a terminal: the job's vertices and checkpoints
    assert "shifted-numbers" in capsys.readouterr().out
    ip.run_line_magic("flink", "cluster")
    assert set(shown[-1]["job"]) == {"shifted-numbers"} and len(shown[-1]) == 2  # 1 TaskManager, 2 slots
    ip.run_line_magic("flink", "checkpoint")
    assert Path(ip.user_ns["checkpoint"]).name.startswith("chk-")
    ip.run_line_magic("flink", "webui")
    assert remote in capsys.readouterr().out
    ip.run_line_magic("flink", "logs -n 100000")  # the cluster's log file, through GET /jobmanager/log
    log = capsys.readouterr().out
    assert log.startswith(f"{remote}/jobmanager/log:\n") and "Starting MiniCluster: backend process" in log
    assert "Job 'shifted-numbers' (" in log and "switched from state CREATED to RUNNING." in log

    target = tmp_path / "savepoints"
    ip.run_line_magic("flink", f"savepoint --dir {target}")
    savepoint = ip.user_ns["savepoint"]
    assert Path(savepoint).is_dir() and Path(savepoint).parent == target
    assert rest.get_job_status(job_id) == JobStatus.RUNNING  # a savepoint alone does not stop the job

    # what needs the cluster's own process, and starting an in-kernel cluster, are refused
    usage_error(ip, "kill-taskmanager 1", r"^%flink kill-taskmanager: not available on the remote cluster at "
                                          r".*TaskManager processes belong to the cluster")
    usage_error(ip, "stop", "^%flink stop: not available on the remote cluster .*%flink disconnect leaves it")
    usage_error(ip, "start", "^%flink start: connected to the cluster at .*; %flink disconnect first")
    usage_error(ip, f"connect {remote}", "^%flink connect: already connected to .*; %flink disconnect first")

    ip.run_line_magic("flink", "disconnect")
    assert "the cluster and its jobs keep running" in capsys.readouterr().out
    assert rest.get_job_status(job_id) == JobStatus.RUNNING
    _not_connected(ip)

    # a second notebook (another process, as a restarted kernel) finds the job and cancels it
    second = subprocess.run([sys.executable, "-c", SECOND_NOTEBOOK, remote, job_id[:8]], capture_output=True,
                            text=True, timeout=120, cwd=tmp_path, env=_python_env(Path(os.environ[HOME_ENV])))
    assert second.returncode == 0, second.stderr
    assert f"'job_id': '{job_id}', 'name': 'shifted-numbers', 'status': 'RUNNING'" in second.stdout
    assert f"Cancelled job {job_id} (shifted-numbers)." in second.stdout
    assert rest.get_job_status(job_id) == JobStatus.CANCELED


def test_restore_submits_with_the_savepoint_path_to_the_remote_cluster(shell, remote, tmp_path) -> None:
    ip, _ = shell
    host, port = parse_address(remote)
    rest = RestClusterClient(host, port)
    ip.run_line_magic("flink", f"connect {host}:{port}")  # HOST:PORT works as well as the URL
    ip.run_cell_magic("flink", "--submit --show none --name first", JOB_CELL)
    first = str(ip.user_ns["job"].get_job_id())
    wait_until(lambda: rest.get_job_status(first) == JobStatus.RUNNING, message="the job to be RUNNING")
    ip.run_line_magic("flink", f"savepoint --stop --dir {tmp_path / 'savepoints'}")
    wait_until(lambda: rest.get_job_status(first).is_globally_terminal_state(), message="the stopped job to end")

    ip.run_cell_magic("flink", "--show none --name restored", JOB_CELL)  # the same program again, same uids
    ip.run_line_magic("flink", "restore {savepoint}")
    restored = str(ip.user_ns["job"].get_job_id())
    assert restored != first
    stats = wait_until(lambda: (rest.request("GET", f"/jobs/{restored}/checkpoints")[1].get("latest") or {})
                       .get("restored"), message="the restored job's restored checkpoint")
    assert stats["external_path"] == ip.user_ns["savepoint"] and stats["is_savepoint"]
    ip.run_line_magic("flink", f"cancel {restored}")
    assert rest.get_job_status(restored) == JobStatus.CANCELED
    ip.run_line_magic("flink", "disconnect")


def test_connecting_where_nothing_listens_is_one_line_and_leaves_nothing_connected(shell, tmp_path,
                                                                                  monkeypatch) -> None:
    ip, _ = shell
    monkeypatch.setenv(HOME_ENV, str(tmp_path / "home"))
    monkeypatch.delenv(SECRET_ENV, raising=False)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # free once closed: nobody listens there
    usage_error(ip, f"connect 127.0.0.1:{port}", rf"^%flink connect: no streamkernel cluster answers at "
                                                 rf"http://127.0.0.1:{port} ")
    usage_error(ip, "connect nowhere", r"^%flink connect: %flink connect 'nowhere': expected HOST:PORT")
    _not_connected(ip)


def test_connecting_to_an_http_server_that_is_no_rest_api_is_one_line(shell, tmp_path, monkeypatch) -> None:
    ip, _ = shell
    monkeypatch.setenv(HOME_ENV, str(tmp_path / "home"))
    monkeypatch.delenv(SECRET_ENV, raising=False)
    server = subprocess.Popen([sys.executable, "-u", "-m", "http.server", "0", "--bind", "127.0.0.1"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=tmp_path)
    try:
        assert server.stdout is not None
        line = server.stdout.readline()  # "Serving HTTP on 127.0.0.1 port N (http://127.0.0.1:N/) ..."
        port = int(line.split(" port ")[1].split()[0])
        usage_error(ip, f"connect http://127.0.0.1:{port}",
                    rf"^%flink connect: the HTTP server at http://127.0.0.1:{port} is not a streamkernel/Flink "
                    rf"REST API \(GET /config answered HTTP 404\)$")
        _not_connected(ip)
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_a_wrong_or_missing_secret_is_found_at_connect_time(shell, remote, tmp_path, monkeypatch) -> None:
    ip, _ = shell
    wrong = tmp_path / "wrong.secret"
    wrong.write_text(os.urandom(32).hex() + "\n")
    wrong.chmod(0o600)
    usage_error(ip, f"connect {remote} --secret-file {wrong}",
                r"^%flink connect: the cluster at .* refused the submission \(401\): .*the secret used does not "
                r"match the cluster's$")
    _not_connected(ip)
    usage_error(ip, f"connect {remote} --secret-file {tmp_path / 'missing.secret'}",
                r"^%flink connect: cannot read the cluster secret file '.*missing.secret'")
    wrong.chmod(0o644)
    usage_error(ip, f"connect {remote} --secret-file {wrong}", r"^%flink connect: Permissions 0644 for .* are too open")
    _not_connected(ip)
    monkeypatch.setenv(HOME_ENV, str(tmp_path / "elsewhere"))  # a client that cannot find the cluster's secret
    usage_error(ip, f"connect {remote}", r"^%flink connect: no secret found for the cluster at .*--secret-file")
    _not_connected(ip)


BOUNDED_CELL = textwrap.dedent("""
    from streamkernel.common import Types

    def tripled(x):
        return x * 3

    result = env.from_collection([1, 2, 3], type_info=Types.INT()).map(tripled, output_type=Types.INT()) \\
        .add_sink(lambda x: None).name("drop")
    result = env.execute("bounded in a cell")
    later = StreamExecutionEnvironment.get_execution_environment()
""")


def test_execute_and_new_environments_go_to_the_connected_cluster(shell, remote) -> None:
    ip, _ = shell
    host, port = parse_address(remote)
    rest = RestClusterClient(host, port)
    ip.run_line_magic("flink", f"connect {remote}")
    ip.run_cell_magic("flink", "--show none", BOUNDED_CELL)
    job_id = str(ip.user_ns["result"].get_job_id())
    assert rest.get_job_status(job_id) == JobStatus.FINISHED  # env.execute() ran it there, attached
    later = ip.user_ns["later"].to_configuration_dict()  # an environment created while connected
    assert (later["execution.target"], later["rest.address"], later["rest.port"]) == ("remote", host, str(port))

    # execute_and_collect takes the same remote route: the job runs there, its results come back
    jobs_before = {j["id"] for j in rest.list_jobs()}
    ip.run_cell("collected = sorted(env.from_collection([1, 2, 3]).map(tripled).execute_and_collect(limit=3))")
    assert ip.user_ns["collected"] == [3, 6, 9]
    assert len({j["id"] for j in rest.list_jobs()} - jobs_before) == 1

    ip.run_line_magic("flink", "disconnect")
    _not_connected(ip)
    fresh = ip.run_cell("StreamExecutionEnvironment.get_execution_environment().to_configuration_dict()").result
    assert "execution.target" not in fresh


def test_the_live_cockpit_follows_the_remote_job(shell, remote, monkeypatch) -> None:
    from streamkernel.jupyter.widgets.cockpit import ClusterView, JobDashboard
    from streamkernel.jupyter.widgets.refresher import refresher_for

    ip, shown = shell
    magics = ip.magics_manager.registry["FlinkMagics"]
    monkeypatch.setattr(magics.cockpit, "_live", lambda: True)  # as under a notebook frontend
    ip.run_line_magic("flink", f"connect {remote}")
    remote_cluster = ip.user_ns["cluster"]
    ip.run_cell_magic("flink", "--submit --show none --name watched", JOB_CELL)
    dashboard = next(view for view in shown if isinstance(view, JobDashboard))  # shown by the submission
    job_id = str(ip.user_ns["job"].get_job_id())
    assert dashboard.job_id == job_id
    wait_until(lambda: dashboard.model is not None and dashboard.model.status == "RUNNING"
               and sum(s.records_out for s in dashboard.model.subtasks) > 0 and dashboard.model.checkpoints,
               message="the dashboard to show the running job's records and checkpoints")
    assert dashboard.trigger_checkpoint().startswith("Checkpoint completed: ")
    with pytest.raises(Exception, match="killing a TaskManager is not available on the remote cluster"):
        remote_cluster.failures.kill_taskmanager("TM1")

    ip.run_line_magic("flink", "slots")
    view = shown[-1]
    assert isinstance(view, ClusterView)
    wait_until(lambda: view.model is not None and view.model.jobs and view.model.jobs[0][1:] == ("watched", "RUNNING"),
               message="the cluster view to list the running job")
    assert dashboard.cancel() == f"Cancelled job {job_id}."
    ip.run_line_magic("flink", "disconnect")
    assert not refresher_for(remote_cluster).running  # the live views stopped asking the cluster


def test_a_cluster_gone_while_connected_is_one_line_and_disconnect_still_works(shell, cluster_process) -> None:
    ip, _ = shell
    ip.run_line_magic("flink", f"connect {cluster_process.url}")
    cluster_process.stop()
    for line in ("jobs", "checkpoints", "metrics", "slots", "savepoint"):
        usage_error(ip, line, rf"^%flink {line}: no streamkernel cluster answers at {cluster_process.url} ")
    ip.run_cell("env.from_collection([1]).add_sink(lambda x: None)")
    usage_error(ip, "submit", rf"^%flink submit: no streamkernel cluster answers at {cluster_process.url} ")
    with pytest.raises(UsageError, match=r"^%%flink --submit: no streamkernel cluster answers at "):
        ip.run_cell_magic("flink", "--submit --show none", "env.from_collection([1]).add_sink(lambda x: None)")
    ip.run_line_magic("flink", "disconnect")
    _not_connected(ip)
