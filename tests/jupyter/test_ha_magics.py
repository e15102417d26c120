"""``%flink connect zookeeper://...`` and ``%flink ha``: a notebook that follows the leading JobManager.

Two stand-in JobManagers (``tests/runtime/highavailability/standin_leader.py``, a TEST FIXTURE for
the leading JobManager until it is merged) on a real ZooKeeper: the notebook connects through the
quorum and cluster id, ``%flink ha`` lists the leader, both contenders and a persisted execution
plan; the leader resigns, and without reconnecting ``cluster.rest_url``, ``%flink jobs`` and a new
submission use the new leader; with no leader a read says so in one line; disconnecting closes
the ZooKeeper session.
"""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest
from IPython.core.error import UsageError

_HA_TESTS = str(Path(__file__).resolve().parents[1] / "runtime" / "highavailability")
if _HA_TESTS not in sys.path:
    sys.path.insert(0, _HA_TESTS)

from ha_testkit import ha_config, wait_until, zookeeper_server  # noqa: E402
from standin_leader import StandInLeader  # noqa: E402

from streamkernel.jupyter.widgets.cockpit import ClusterView  # noqa: E402
from streamkernel.jupyter.widgets.history import MetricsHistory  # noqa: E402
from streamkernel.runtime.rest.cluster_secret import HOME_ENV, SECRET_ENV, SECRET_FILE_ENV  # noqa: E402

JOB_CELL = "env.from_collection([1, 2, 3]).map(lambda x: x * 10).add_sink(lambda x: None)"


@pytest.fixture(scope="module")
def zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    zookeeper_server.require_zookeeper()
    server = zookeeper_server.ZooKeeperServer(tmp_path_factory.mktemp("zookeeper"))
    server.start()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def cluster(zookeeper: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[dict, list]]:
    """The HA configuration and two stand-in JobManagers, the first leading."""
    monkeypatch.setenv(HOME_ENV, str(tmp_path / "home"))
    for name in (SECRET_ENV, SECRET_FILE_ENV):
        monkeypatch.delenv(name, raising=False)
    conf = ha_config(zookeeper, tmp_path / "ha-storage")
    leaders: list[StandInLeader] = []
    try:
        leaders.append(StandInLeader(conf, dict(os.environ)))
        leaders[0].wait_leader()
        leaders.append(StandInLeader(conf, dict(os.environ)))
        yield conf, leaders
    finally:
        for leader in leaders:
            leader.stop()


class _NotHighlyAvailable:
    """A cluster without ``ha_services``."""


@pytest.fixture
def connected(shell: Any) -> Iterator[tuple[Any, list]]:
    """The notebook; disconnected at the end whatever happened (its ZooKeeper session closed)."""
    yield shell
    connection = shell[0].magics_manager.registry["FlinkMagics"].cluster_commands.connection
    if connection.remote is not None:
        connection.disconnect(None)


def _url(conf: dict) -> str:
    return f"zookeeper://{conf['high-availability.zookeeper.quorum']}{conf['high-availability.cluster-id']}"


def _table(shown: list) -> dict[str, str]:
    return {row["name"]: row["value"] for row in shown[-1].to_dict("records")}


def test_the_notebook_follows_the_leader(connected: Any, cluster: tuple[dict, list], capsys: Any) -> None:
    ip, shown = connected
    conf, leaders = cluster
    plan = uuid.uuid4().hex
    leaders[0].put_execution_plan(plan)
    ip.run_line_magic("flink", f"connect {_url(conf)} -D high-availability.storageDir="
                               f"{conf['high-availability.storageDir']}")
    remote = ip.user_ns["cluster"]
    assert remote.rest_url == leaders[0].rest_url
    assert f"Connected to the leading JobManager of {_url(conf)}" in capsys.readouterr().out

    ip.run_line_magic("flink", "ha")
    assert "2 contender(s), 1 persisted job entry" in capsys.readouterr().out
    rows = shown[-1].to_dict("records")
    table = _table(shown)
    assert table["cluster id"] == conf["high-availability.cluster-id"]
    assert table["ZooKeeper connection"] == "CONNECTED" and table["REST URL"] == leaders[0].rest_url
    contenders = [row["value"] for row in rows if row["section"] == "contenders"]
    assert len(contenders) == 2
    assert leaders[0].rest_url in contenders[0] and contenders[0].endswith("LEADER")
    assert leaders[1].rest_url in contenders[1] and contenders[1].endswith("standby")
    assert table[plan] == "execution-plans"
    view = ClusterView(remote)  # the cluster view of %flink slots / start: an HA panel, as the cluster is HA
    view.refresh(remote.inspection.snapshot(), MetricsHistory())
    assert view.ha_panel is not None and view.ha_panel in view.children
    assert view.ha_panel.value.count('data-section="contenders"') == 2 and leaders[0].rest_url in view.ha_panel.value
    assert ClusterView(_NotHighlyAvailable()).ha_panel is None  # not HA: no panel

    leaders[0].resign()
    wait_until(lambda: remote.rest_url == leaders[1].rest_url, "the notebook's cluster following the new leader")
    ip.run_cell(JOB_CELL)
    ip.run_line_magic("flink", "submit")  # goes to the new leader, no reconnecting
    job_id = str(ip.user_ns["job"].get_job_id())
    ip.run_line_magic("flink", "jobs")
    assert [row["job_id"] for row in shown[-1].to_dict("records")] == [job_id]

    leaders[1].resign()
    wait_until(lambda: remote.client.leader is None, "no leader once both resigned")
    with pytest.raises(UsageError) as raised:
        ip.run_line_magic("flink", "jobs")
    assert "no leading JobManager of cluster" in str(raised.value) and "\n" not in str(raised.value)

    ip.run_line_magic("flink", "disconnect")
    assert f"%flink connect {_url(conf)} to come back" in capsys.readouterr().out
    assert remote.ha_services.connection_state == "LOST"


def test_connect_errors_are_one_line(connected: Any, zookeeper: Any, tmp_path: Path) -> None:
    ip, _ = connected
    with pytest.raises(UsageError, match=r"quorum entry 'zk' is not HOST:PORT"):
        ip.run_line_magic("flink", "connect zookeeper://zk/prod")
    with pytest.raises(UsageError, match=r"-D KEY=VALUE is for a zookeeper://"):
        ip.run_line_magic("flink", "connect 127.0.0.1:8081 -D high-availability.storageDir=/x")
    conf = ha_config(zookeeper, tmp_path / "s")
    with pytest.raises(UsageError, match=r"no leading JobManager of cluster .* within 1 s"):
        ip.run_line_magic("flink", f"connect {_url(conf)} -D 'high-availability.zookeeper.client.connection-timeout=1 s'")
    with pytest.raises(UsageError, match=r"%flink ha: no cluster"):
        ip.run_line_magic("flink", "ha")
    assert ip.user_ns.get("cluster") is None


def test_connect_to_a_closed_port_is_one_line_within_the_connection_timeout_and_kazoo_stays_quiet(
        connected: Any, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 29, item 10: no ZooKeeper at the address. One line naming the address and the key, as soon
    as the connection timeout (2 s here) passes, and not a record of kazoo's retries."""
    import logging
    import socket
    import time

    ip, _ = connected
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    caplog.set_level(logging.DEBUG, logger="kazoo")
    started = time.monotonic()
    with pytest.raises(UsageError) as raised:
        ip.run_line_magic("flink", f"connect zookeeper://127.0.0.1:{port}/prod "
                                   "-D 'high-availability.zookeeper.client.connection-timeout=2 s'")
    elapsed = time.monotonic() - started
    message = str(raised.value)
    assert message == (f"%flink connect: Could not connect to the ZooKeeper quorum '127.0.0.1:{port}' "
                       "('high-availability.zookeeper.quorum') within 2 s "
                       "('high-availability.zookeeper.client.connection-timeout'): Connection dropped: socket "
                       "connection error: Connection refused")
    assert elapsed < 10, elapsed  # 2 s and a loaded machine's margin; kazoo's own wait is 15 s
    assert [r.getMessage() for r in caplog.records if r.name.startswith("kazoo")] == []
    assert "kazoo" not in capsys.readouterr().err
    assert ip.user_ns.get("cluster") is None


def test_start_ha_makes_the_kernel_a_contender_that_recovers_its_jobs_after_a_restart(
        shell: Any, zookeeper: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    """``%flink start --ha``: the kernel's JobManager leads; its job is persisted; ``%flink stop`` (what a
    kernel restart does to it) suspends the job; the same line again recovers it from its checkpoint."""
    from streamkernel.testing import FileGate

    monkeypatch.setenv(HOME_ENV, str(tmp_path / "home"))
    ip, _ = shell
    url = f"zookeeper://{zookeeper.connect_string}/kernel-{uuid.uuid4().hex[:8]}"
    line = f"start --ha {url} -D high-availability.zookeeper.client.session-timeout=2s"
    ip.run_line_magic("flink", line)
    assert "this kernel's JobManager leads cluster" in capsys.readouterr().out
    gate = FileGate(tmp_path, "hold")
    ip.user_ns.update(gate=gate, gates=[gate], checkpoints=str(tmp_path / "checkpoints"))
    ip.run_cell("from streamkernel.testing import ScriptedSource\n"
                "from streamkernel.common import Types, WatermarkStrategy\n"
                "env.enable_checkpointing(200)\n"
                "env.get_checkpoint_config().set_checkpoint_storage_dir(checkpoints)\n"
                "env.from_source(ScriptedSource([1, 2, gate, 3]), WatermarkStrategy.no_watermarks(), 'numbers',"
                " type_info=Types.INT()).add_sink(lambda x: None)\n"
                "job_id = str(env.execute_async('held').get_job_id())").raise_error()
    job_id = ip.user_ns["job_id"]
    cluster = ip.user_ns["cluster"]
    wait_until(lambda: (cluster.checkpoints.checkpoint_stats(job_id) or _NoStats).num_completed >= 1,
               "a checkpoint completes")
    ip.run_line_magic("flink", "stop")
    ip.run_line_magic("flink", line)
    assert f"recovered 1 job(s): {job_id}" in capsys.readouterr().out
    again = ip.user_ns["cluster"]
    wait_until(lambda: {str(j.job_id): j.status.name for j in again.jobs()}.get(job_id) == "RUNNING",
               "the recovered job runs")
    assert again.checkpoints.checkpoint_stats(job_id).latest_restored is not None
    ip.run_line_magic("flink", "stop")
    with pytest.raises(UsageError, match="--ha: .*quorum entry 'nohost'"):
        ip.run_line_magic("flink", "start --ha zookeeper://nohost/x")


class _NoStats:
    num_completed = 0
