"""Leader election and retrieval on a real ZooKeeper: one leader at a time, revoked before another
is granted, across a lost session and a ZooKeeper restart."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ha_testkit import WAIT_S, RecordingContender, RecordingListener, ha_config, wait_until

from streamkernel.runtime.highavailability import DISPATCHER, RESOURCE_MANAGER, create_ha_services


def _contend(services: Any, name: str, components: tuple[str, ...] = (DISPATCHER,)) -> dict[str, RecordingContender]:
    contenders = {}
    for component in components:
        contender = contenders[component] = RecordingContender(f"{name}/{component}")
        services.leader_election(component).start_leader_election(contender)
    return contenders


def test_one_of_two_contenders_leads_the_other_takes_over_when_its_session_ends(zookeeper: Any,
                                                                                tmp_path: Path) -> None:
    conf = ha_config(zookeeper, tmp_path)
    first, second = create_ha_services(conf), create_ha_services(conf)
    watcher = create_ha_services(conf)
    try:
        listener = RecordingListener()
        watcher.get_resource_manager_leader_retriever().start(listener)
        a = _contend(first, "a", (DISPATCHER, RESOURCE_MANAGER))
        wait_until(lambda: a[DISPATCHER].leading_session and a[RESOURCE_MANAGER].leading_session, "a granted")
        session_a = a[DISPATCHER].leading_session
        assert a[RESOURCE_MANAGER].leading_session == session_a  # one session for the process's components
        first.leader_election(RESOURCE_MANAGER).confirm_leadership(session_a, "rpc://a:1")
        wait_until(lambda: listener.last == ("rpc://a:1", session_a), "the retrieval listener to see a")

        b = _contend(second, "b", (DISPATCHER, RESOURCE_MANAGER))
        # b waits: a holds the latch. (b's process has joined: its latch node exists behind a's.)
        wait_until(lambda: len(second.client.get_children(second.paths.latch)) == 2, "b's latch node")
        assert b[DISPATCHER].events == [] and not second.leader_election_service().has_leadership(session_a)
        assert first.leader_election(DISPATCHER).has_leadership(session_a)

        first.client.stop()  # a's ZooKeeper session ends (as when its process is killed)
        wait_until(lambda: a[DISPATCHER].events[-1:] == [("revoke", None)], "a revoked")
        assert not first.leader_election(DISPATCHER).has_leadership(session_a)
        session_b = wait_until(lambda: b[RESOURCE_MANAGER].leading_session, "b granted")
        assert session_b != session_a
        # a is revoked at most once and never granted again
        assert a[DISPATCHER].count("grant") == 1 and a[DISPATCHER].count("revoke") == 1

        second.leader_election(RESOURCE_MANAGER).confirm_leadership(session_b, "rpc://b:2")
        wait_until(lambda: listener.last == ("rpc://b:2", session_b), "the retrieval listener to see b")
        data, _ = watcher.client.get(watcher.paths.connection_info(RESOURCE_MANAGER))
        assert b"rpc://b:2" in data and str(session_b).encode() in data
        # between a and b the listener heard "no leader" (a's ephemeral connection_info went with its session)
        assert (None, None) in listener.notifications[listener.notifications.index(("rpc://a:1", session_a)):]
    finally:
        for services in (first, second, watcher):
            services.close()


def test_a_stale_session_id_cannot_confirm_and_a_closed_election_hands_over(zookeeper: Any, tmp_path: Path) -> None:
    conf = ha_config(zookeeper, tmp_path)
    first, second = create_ha_services(conf), create_ha_services(conf)
    try:
        a = _contend(first, "a")
        session_a = wait_until(lambda: a[DISPATCHER].leading_session, "a granted")
        b = _contend(second, "b")
        first.close()  # a leaves the election in an orderly way
        assert a[DISPATCHER].events[-1] == ("revoke", None)
        session_b = wait_until(lambda: b[DISPATCHER].leading_session, "b granted")
        # b cannot be confirmed with a's session id: nothing is published
        second.leader_election(DISPATCHER).confirm_leadership(session_a, "rpc://stale")
        assert second.client.exists(second.paths.connection_info(DISPATCHER)) is None
        second.leader_election(DISPATCHER).confirm_leadership(session_b, "rpc://b")
        assert second.client.get(second.paths.connection_info(DISPATCHER))[0].startswith(b'{"address": "rpc://b"')
    finally:
        second.close()


def test_a_zookeeper_restart_revokes_the_leader_and_grants_it_again(zookeeper: Any, tmp_path: Path) -> None:
    services = create_ha_services(ha_config(zookeeper, tmp_path))
    try:
        a = _contend(services, "a")
        session = wait_until(lambda: a[DISPATCHER].leading_session, "a granted")
        zookeeper.stop()
        try:
            # suspended connection: revoked although the session may still be alive on the server
            wait_until(lambda: a[DISPATCHER].events[-1:] == [("revoke", None)], "a revoked on suspension")
            assert not services.leader_election(DISPATCHER).has_leadership(session)
        finally:
            zookeeper.start()
        regained = wait_until(lambda: a[DISPATCHER].leading_session, "a granted again after the restart")
        assert regained != session
        assert [kind for kind, _ in a[DISPATCHER].events] == ["grant", "revoke", "grant"]
        services.leader_election(DISPATCHER).confirm_leadership(regained, "rpc://a")
        assert services.client.exists(services.paths.connection_info(DISPATCHER)) is not None
    finally:
        services.close()


def _expire_session(services: Any, quorum: str) -> None:
    """Expire ``services``' ZooKeeper session on the server: a second client joins the session and
    closes it (the classic way, as Curator's KillSession does)."""
    from kazoo.client import KazooClient

    session_id, password = services.client.client_id
    intruder = KazooClient(hosts=quorum, client_id=(session_id, password))
    intruder.start(timeout=10)
    intruder.stop()
    intruder.close()


def test_an_expired_session_revokes_the_leader_which_then_queues_behind_the_new_one(zookeeper: Any,
                                                                                    tmp_path: Path) -> None:
    conf = ha_config(zookeeper, tmp_path)
    first, second = create_ha_services(conf), create_ha_services(conf)
    try:
        a = _contend(first, "a")
        session_a = wait_until(lambda: a[DISPATCHER].leading_session, "a granted")
        b = _contend(second, "b")
        wait_until(lambda: len(second.client.get_children(second.paths.latch)) == 2, "b's latch node")
        _expire_session(first, zookeeper.connect_string)
        wait_until(lambda: a[DISPATCHER].events[-1:] == [("revoke", None)], "a revoked")
        session_b = wait_until(lambda: b[DISPATCHER].leading_session, "b granted")
        # a's process got a new session and joined the election again, behind b: it waits
        wait_until(lambda: len(second.client.get_children(second.paths.latch)) == 2, "a's new latch node")
        assert a[DISPATCHER].count("grant") == 1 and not first.leader_election(DISPATCHER).has_leadership(session_a)
        second.close()  # b leaves: a leads again, with a new session id
        session_a2 = wait_until(lambda: a[DISPATCHER].leading_session, "a granted again")
        assert session_a2 not in (session_a, session_b)
    finally:
        first.close()
        second.close()


def test_a_former_leader_leaving_does_not_delete_its_successors_address(zookeeper: Any, tmp_path: Path) -> None:
    conf = ha_config(zookeeper, tmp_path)
    first, second = create_ha_services(conf), create_ha_services(conf)
    try:
        a = _contend(first, "a")
        session_a = wait_until(lambda: a[DISPATCHER].leading_session, "a granted")
        first.leader_election(DISPATCHER).confirm_leadership(session_a, "rpc://a")
        b = _contend(second, "b")
        wait_until(lambda: len(second.client.get_children(second.paths.latch)) == 2, "b's latch node")
        # a's latch node vanishes while a's session lives on (a re-queues behind b)
        second.client.delete(first._driver._owned)  # type: ignore[attr-defined]
        wait_until(lambda: a[DISPATCHER].events[-1:] == [("revoke", None)], "a revoked")
        session_b = wait_until(lambda: b[DISPATCHER].leading_session, "b granted")
        second.leader_election(DISPATCHER).confirm_leadership(session_b, "rpc://b")  # replaces a's node
        path = second.paths.connection_info(DISPATCHER)
        assert second.client.get(path)[1].ephemeralOwner == second.client.client_id[0]
        first.leader_election(DISPATCHER).close()  # a's component leaves
        assert b'"rpc://b"' in second.client.get(path)[0]
        first.close()
        assert b'"rpc://b"' in second.client.get(path)[0]
    finally:
        first.close()
        second.close()


def _outage(zookeeper: Any, seconds: float) -> None:
    """Stop ZooKeeper, keep it away for ``seconds`` (the scenario's length, longer than a session),
    and start it again."""
    zookeeper.stop()
    try:
        back_at = time.monotonic() + seconds
        wait_until(lambda: time.monotonic() >= back_at, "the end of the outage", timeout=seconds + WAIT_S)
    finally:
        zookeeper.start()


def test_a_standby_stays_in_the_election_through_a_zookeeper_outage(zookeeper: Any, tmp_path: Path) -> None:
    """Issue 29: a standby waiting for the latch while ZooKeeper was away for longer than a session
    (its requests timed out) left the election for good; the leader's death then left no leader."""
    conf = ha_config(zookeeper, tmp_path)
    first, second = create_ha_services(conf), create_ha_services(conf)
    try:
        a = _contend(first, "a")
        wait_until(lambda: a[DISPATCHER].leading_session, "a granted")
        b = _contend(second, "b")
        wait_until(lambda: len(second.client.get_children(second.paths.latch)) == 2, "b's latch node")
        _outage(zookeeper, 3 * 2.0)  # three session timeouts (ha_config's 2 s)
        wait_until(lambda: a[DISPATCHER].leading_session, "a leads again after the outage")
        # b's place in the queue is kept: one latch node each, not an orphan of b's in front of b
        wait_until(lambda: len(second.client.get_children(second.paths.latch)) == 2, "b's latch node, still one")
        assert b[DISPATCHER].events == []
        first.client.stop()  # the leader's session ends (as when its process is killed)
        session_b = wait_until(lambda: b[DISPATCHER].leading_session, "b takes over after the outage")
        second.leader_election(DISPATCHER).confirm_leadership(session_b, "rpc://b")
        assert b'"rpc://b"' in second.client.get(second.paths.connection_info(DISPATCHER))[0]
    finally:
        first.close()
        second.close()


def test_a_standby_whose_session_expired_queues_again_and_takes_over(zookeeper: Any, tmp_path: Path) -> None:
    conf = ha_config(zookeeper, tmp_path)
    first, second = create_ha_services(conf), create_ha_services(conf)
    try:
        a = _contend(first, "a")
        wait_until(lambda: a[DISPATCHER].leading_session, "a granted")
        b = _contend(second, "b")
        wait_until(lambda: len(first.client.get_children(first.paths.latch)) == 2, "b's latch node")
        old_session = second.client.client_id[0]
        _expire_session(second, zookeeper.connect_string)
        wait_until(lambda: second.client.connected and second.client.client_id[0] != old_session,
                   "b's process has a new session")
        # b's node went with its session; b queues again with a new one behind a
        wait_until(lambda: len(first.client.get_children(first.paths.latch)) == 2, "b's new latch node")
        assert b[DISPATCHER].events == []
        first.client.stop()
        wait_until(lambda: b[DISPATCHER].leading_session, "b takes over")
    finally:
        first.close()
        second.close()
