"""Choosing the HA services from the configuration: the NONE services in one process, and the
errors a bad ZooKeeper setup gets at once, naming the key."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path
from typing import Any

import pytest
from ha_testkit import RecordingContender, RecordingListener, wait_until

from streamkernel.common.options import HighAvailabilityOptions, find_option, validate_configuration
from streamkernel.common.options.high_availability import check_high_availability_options
from streamkernel.errors import IllegalConfigurationError
from streamkernel.runtime.highavailability import (
    DISPATCHER,
    REST_SERVER,
    CompletedCheckpointPointer,
    JobResult,
    JobResultEntry,
    create_ha_services,
)
from streamkernel.runtime.highavailability.standalone import EmbeddedHaServices
from streamkernel.runtime.highavailability.zookeeper_utils import ZooKeeperConnectionError


def _zk(**extra: str) -> dict[str, str]:
    return {"high-availability.type": "zookeeper", **extra}


def test_flink_keys_and_defaults() -> None:
    assert HighAvailabilityOptions.HA_MODE.get({}) == "NONE"
    assert HighAvailabilityOptions.HA_MODE.get({"high-availability": "zookeeper"}) == "ZOOKEEPER"  # Flink 1.x key
    assert find_option("high-availability") is HighAvailabilityOptions.HA_MODE
    assert HighAvailabilityOptions.HA_ZOOKEEPER_ROOT.get({}) == "/flink"
    assert HighAvailabilityOptions.HA_CLUSTER_ID.get({}) == "/default"
    assert HighAvailabilityOptions.ZOOKEEPER_SESSION_TIMEOUT.get({}).to_milliseconds() == 60_000
    assert HighAvailabilityOptions.ZOOKEEPER_CONNECTION_TIMEOUT.get({}).to_milliseconds() == 15_000
    with pytest.raises(IllegalConfigurationError, match="'high-availability.type'.*NONE, ZOOKEEPER"):
        validate_configuration({"high-availability.type": "etcd"})


@pytest.mark.parametrize("conf, message", [
    (_zk(), "needs 'high-availability.zookeeper.quorum'"),
    (_zk(**{"high-availability.zookeeper.quorum": "zk1"}), "key 'high-availability.zookeeper.quorum': expected host:port"),
    (_zk(**{"high-availability.zookeeper.quorum": "zk1:2181"}), "needs 'high-availability.storageDir'"),
    (_zk(**{"high-availability.zookeeper.quorum": "zk1:2181", "high-availability.storageDir": "/s",
            "high-availability.cluster-id": "/"}), "key 'high-availability.cluster-id': expected a ZooKeeper path"),
])
def test_an_incomplete_zookeeper_setup_names_the_key(conf: dict[str, str], message: str) -> None:
    with pytest.raises(IllegalConfigurationError, match=message):
        create_ha_services(conf)


def test_a_storage_dir_that_cannot_be_created_or_written_names_the_key(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    conf = _zk(**{"high-availability.zookeeper.quorum": "127.0.0.1:1", "high-availability.storageDir": str(blocker / "ha")})
    with pytest.raises(IllegalConfigurationError, match=f"'{blocker / 'ha'}' for key 'high-availability.storageDir'"):
        check_high_availability_options(conf)
    if os.geteuid() != 0:  # root writes anywhere
        read_only = tmp_path / "read-only"
        read_only.mkdir(mode=0o500)
        conf["high-availability.storageDir"] = str(read_only)
        with pytest.raises(IllegalConfigurationError, match="key 'high-availability.storageDir': .*cannot be created "
                                                            "or written"):
            check_high_availability_options(conf)
    # the 1.x key is named when that is the key the user wrote
    conf = {"high-availability": "zookeeper", "high-availability.zookeeper.quorum": "h:1",
            "high-availability.storageDir": str(blocker / "ha")}
    with pytest.raises(IllegalConfigurationError, match="high-availability.storageDir"):
        check_high_availability_options(conf)


def test_an_unreachable_quorum_fails_within_the_connection_timeout_naming_it(tmp_path: Path) -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    conf = _zk(**{"high-availability.zookeeper.quorum": f"127.0.0.1:{port}", "high-availability.storageDir":
                  str(tmp_path / "ha"), "high-availability.zookeeper.client.connection-timeout": "1 s"})
    started = time.monotonic()
    with pytest.raises(ZooKeeperConnectionError, match=f"quorum '127.0.0.1:{port}' "
                                                       r"\('high-availability.zookeeper.quorum'\) within 1 s"):
        create_ha_services(conf)
    assert time.monotonic() - started < 30  # bounded by the timeout (generous: a loaded machine)


def test_kazoo_is_quiet_while_a_connection_fails_and_logs_as_usual_once_connected(
        tmp_path: Path, zookeeper: Any, caplog: pytest.LogCaptureFixture) -> None:
    """Issue 29, item 10: kazoo's records of a failed first connection (a line per retry) are dropped for
    the one error; a client that connects logs them as before, and so does every other kazoo client."""
    import logging

    from streamkernel.runtime.highavailability.zookeeper_utils import start_zookeeper_client

    caplog.set_level(logging.DEBUG, logger="kazoo")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(ZooKeeperConnectionError, match="within 2 s .*: Connection dropped: .*Connection refused$"):
        start_zookeeper_client(_zk(**{"high-availability.zookeeper.quorum": f"127.0.0.1:{port}",
                                      "high-availability.zookeeper.client.connection-timeout": "2 s"}))
    assert [r.getMessage() for r in caplog.records if r.name.startswith("kazoo")] == []

    client = start_zookeeper_client(_zk(**{"high-availability.zookeeper.quorum": zookeeper.connect_string}))
    try:
        messages = [r.getMessage() for r in caplog.records if r.name == "kazoo.client"]
        assert any(m.startswith("Connecting to ") for m in messages), messages
    finally:
        client.stop()
        client.close()
    assert any("session closed" in r.getMessage() for r in caplog.records if r.name == "kazoo.client")


def test_the_none_services_give_the_same_interface_in_one_process() -> None:
    services = create_ha_services({})
    assert isinstance(services, EmbeddedHaServices)
    with services:
        contender = RecordingContender()
        listener = RecordingListener()
        services.get_cluster_rest_endpoint_leader_retriever().start(listener)
        services.leader_election(REST_SERVER).start_leader_election(contender)
        session = wait_until(lambda: contender.leading_session, "the embedded grant")
        services.leader_election(REST_SERVER).confirm_leadership(session, "http://127.0.0.1:8081")
        assert listener.notifications == [(None, None), ("http://127.0.0.1:8081", session)]
        assert services.leader_election(DISPATCHER).has_leadership(session)

        plans = services.execution_plan_store()
        plans.put_execution_plan("job", {"graph": 1})
        assert plans.get_job_ids() == ["job"] and plans.recover_execution_plan("job") == {"graph": 1}
        factory = services.checkpoint_recovery_factory()
        counter = factory.create_checkpoint_id_counter("job")
        assert [counter.get_and_increment() for _ in range(2)] == [1, 2]
        assert factory.create_checkpoint_id_counter("job").get() == 3  # the same counter for the job
        store = factory.create_completed_checkpoint_store("job", 1)
        assert store.add_checkpoint_and_subsume_oldest_one(CompletedCheckpointPointer(1, "/c/1")) == []
        assert store.add_checkpoint_and_subsume_oldest_one(CompletedCheckpointPointer(2, "/c/2")) == [
            CompletedCheckpointPointer(1, "/c/1")]
        results = services.job_result_store()
        results.create_dirty_result(JobResultEntry(JobResult.from_job_status("job", "FINISHED")))
        results.mark_result_as_clean("job")
        assert results.has_clean_job_result_entry("job") and results.get_dirty_results() == []
    assert contender.events[-1] == ("revoke", None)
    assert listener.last == (None, None)
