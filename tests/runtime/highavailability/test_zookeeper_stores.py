"""The HA stores on a real ZooKeeper, seen by two service instances as two JobManager processes
would see them: what one leader writes the next recovers; a process that does not lead writes nothing."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest
from ha_testkit import RecordingContender, ha_config, wait_until

from streamkernel.runtime.highavailability import (
    DISPATCHER,
    CompletedCheckpointPointer,
    ExecutionPlanRecoveryError,
    HighAvailabilityServices,
    JobResult,
    JobResultEntry,
    LeadershipLostError,
    create_ha_services,
)


def _leader(conf: dict[str, str]) -> tuple[HighAvailabilityServices, RecordingContender]:
    """Services that lead (their dispatcher contender was granted)."""
    services = create_ha_services(conf)
    contender = RecordingContender()
    services.leader_election(DISPATCHER).start_leader_election(contender)
    wait_until(lambda: contender.leading_session, "the leadership")
    return services, contender


def _hand_over(old: HighAvailabilityServices, conf: dict[str, str]) -> HighAvailabilityServices:
    """``old``'s process dies (its session ends); a new process leads."""
    old.close()
    return _leader(conf)[0]


class Plan:
    """A stand-in job graph: anything cloudpickle writes (a class of the test, by value)."""

    def __init__(self, name: str) -> None:
        self.name = name


def test_execution_plans_survive_the_leader_and_a_corrupted_one_fails_alone(zookeeper: Any, tmp_path: Path) -> None:
    conf = ha_config(zookeeper, tmp_path)
    first, _ = _leader(conf)
    first.execution_plan_store().put_execution_plan("job-a", Plan("a"))
    first.execution_plan_store().put_execution_plan("job-b", Plan("b"))
    first.execution_plan_store().put_execution_plan("job-b", Plan("b2"))  # replaced: one file per job remains
    files = sorted(p.name for p in (tmp_path / first.cluster_id).iterdir())  # type: ignore[attr-defined]
    assert len(files) == 2 and all(name.startswith("submittedExecutionPlan-job-") for name in files)
    second = _hand_over(first, conf)
    try:
        store = second.execution_plan_store()
        assert store.get_job_ids() == ["job-a", "job-b"]
        assert store.recover_execution_plan("job-b").name == "b2"
        pointer = json.loads(second.client.get(f"{second.paths.execution_plans}/job-a")[0])  # type: ignore[attr-defined]
        with open(pointer["path"], "r+b") as file:  # one byte changed in storage
            file.seek(10)
            byte = file.read(1)
            file.seek(10)
            file.write(bytes([byte[0] ^ 0xFF]))
        with pytest.raises(ExecutionPlanRecoveryError) as failure:
            store.recover_execution_plan("job-a")
        assert failure.value.job_id == "job-a" and failure.value.path == pointer["path"]
        assert "job-a" in str(failure.value) and pointer["path"] in str(failure.value)
        assert store.recover_execution_plan("job-b").name == "b2"  # the other job still recovers
        assert store.recover_execution_plan("job-unknown") is None
        store.global_cleanup("job-b")
        assert store.get_job_ids() == ["job-a"] and len(os.listdir(tmp_path / second.cluster_id)) == 1  # type: ignore[attr-defined]
    finally:
        second.close()


def test_a_process_that_does_not_lead_writes_nothing(zookeeper: Any, tmp_path: Path) -> None:
    conf = ha_config(zookeeper, tmp_path)
    leader, contender = _leader(conf)
    standby = create_ha_services(conf)
    try:
        with pytest.raises(LeadershipLostError, match="not joined the leader election"):
            standby.execution_plan_store().put_execution_plan("job", Plan("x"))
        standby.leader_election(DISPATCHER).start_leader_election(RecordingContender())
        with pytest.raises(LeadershipLostError, match="not the leader"):
            standby.checkpoint_recovery_factory().create_checkpoint_id_counter("job")
        counter = leader.checkpoint_recovery_factory().create_checkpoint_id_counter("job")
        assert counter.get_and_increment() == 1
        # The leader's latch node vanishes on the server (as when its session expired) before the
        # leader has heard: the transaction's check refuses the write, nothing is written.
        node = leader._driver._owned  # type: ignore[attr-defined]
        standby.client.delete(node)  # type: ignore[attr-defined]
        with pytest.raises(LeadershipLostError):
            counter.get_and_increment()
        assert counter.get() == 2
        wait_until(lambda: contender.events[-1:] == [("revoke", None)], "the leader revoked")
        with pytest.raises(LeadershipLostError):
            leader.execution_plan_store().put_execution_plan("job", Plan("x"))
        assert standby.execution_plan_store().get_job_ids() == []
        assert os.listdir(tmp_path / leader.cluster_id) == []  # type: ignore[attr-defined]  # the written file was removed
    finally:
        standby.close()
        leader.close()


def test_checkpoint_ids_keep_increasing_across_leaders(zookeeper: Any, tmp_path: Path) -> None:
    conf = ha_config(zookeeper, tmp_path)
    first, _ = _leader(conf)
    counter = first.checkpoint_recovery_factory().create_checkpoint_id_counter("job")
    handed_out = [counter.get_and_increment() for _ in range(3)]
    second = _hand_over(first, conf)
    try:
        counter = second.checkpoint_recovery_factory().create_checkpoint_id_counter("job")
        handed_out += [counter.get_and_increment() for _ in range(2)]
        assert handed_out == [1, 2, 3, 4, 5]
        counter.set_count(10)
        assert counter.get_and_increment() == 10 and counter.get() == 11
        counter.shutdown("FINISHED")
        assert second.client.exists(second.paths.checkpoint_id_counter("job")) is None  # type: ignore[attr-defined]
    finally:
        second.close()


def test_concurrent_increments_hand_out_every_id_once(zookeeper: Any, tmp_path: Path) -> None:
    """Counters of one job racing (compare-and-set conflicts are retried, not raised)."""
    leader, _ = _leader(ha_config(zookeeper, tmp_path))
    try:
        factory = leader.checkpoint_recovery_factory()
        counters = [factory.create_checkpoint_id_counter("job") for _ in range(4)]
        ids: list[int] = []
        errors: list[BaseException] = []

        def take(counter: Any) -> None:
            try:
                ids.extend(counter.get_and_increment() for _ in range(15))
            except BaseException as error:  # noqa: BLE001 - reported by the assertion below
                errors.append(error)

        threads = [threading.Thread(target=take, args=(counter,)) for counter in counters]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        assert sorted(ids) == list(range(1, 61))
    finally:
        leader.close()


def test_completed_checkpoints_keep_the_latest_max_retained_and_are_recovered(zookeeper: Any,
                                                                              tmp_path: Path) -> None:
    conf = ha_config(zookeeper, tmp_path)
    first, _ = _leader(conf)
    store = first.checkpoint_recovery_factory().create_completed_checkpoint_store("job", max_retained=2)
    dropped = []
    for checkpoint_id in (7, 8, 9, 10):
        dropped += store.add_checkpoint_and_subsume_oldest_one(
            CompletedCheckpointPointer(checkpoint_id, f"/checkpoints/job/chk-{checkpoint_id}", 1000 + checkpoint_id))
    assert [p.checkpoint_id for p in dropped] == [7, 8]
    assert [p.checkpoint_id for p in store.get_all_checkpoints()] == [9, 10]
    second = _hand_over(first, conf)
    try:
        store = second.checkpoint_recovery_factory().create_completed_checkpoint_store("job", max_retained=2)
        assert store.get_all_checkpoints() == [CompletedCheckpointPointer(9, "/checkpoints/job/chk-9", 1009),
                                               CompletedCheckpointPointer(10, "/checkpoints/job/chk-10", 1010)]
        assert store.get_latest_checkpoint().checkpoint_id == 10  # type: ignore[union-attr]
        store.shutdown("CANCELED")
        assert store.get_all_checkpoints() == []
    finally:
        second.close()


def test_the_job_result_store_lives_in_the_storage_dir(zookeeper: Any, tmp_path: Path) -> None:
    conf = ha_config(zookeeper, tmp_path, cluster_id="/results")
    first = create_ha_services(conf)
    results = first.job_result_store()
    results.create_dirty_result(JobResultEntry(JobResult.from_job_status("job-1", "FINISHED", 12, {"count": 3})))
    written = json.loads((tmp_path / "job-result-store" / "results" / "job-1_DIRTY.json").read_text())
    assert written == {"result": {"id": "job-1", "application-status": "SUCCEEDED", "accumulator-results":
                                  {"count": 3}, "net-runtime": 12}, "version": 1}  # Flink's format
    first.close()
    second = create_ha_services(conf)
    try:
        results = second.job_result_store()
        assert results.has_dirty_job_result_entry("job-1") and results.has_job_result_entry("job-1")
        assert results.get_dirty_results() == [JobResult("job-1", "SUCCEEDED", 12, {"count": 3})]
        results.mark_result_as_clean("job-1")
        assert results.has_clean_job_result_entry("job-1") and not results.has_dirty_job_result_entry("job-1")
        assert results.get_dirty_results() == []
        with pytest.raises(ValueError, match="job-1"):
            results.create_dirty_result(JobResultEntry(JobResult("job-1", "FAILED")))
    finally:
        second.close()


def test_two_cluster_ids_on_one_zookeeper_do_not_see_each_other(zookeeper: Any, tmp_path: Path) -> None:
    one, _ = _leader(ha_config(zookeeper, tmp_path, cluster_id="/one"))
    other, other_contender = _leader(ha_config(zookeeper, tmp_path, cluster_id="/other"))
    try:
        assert other_contender.leading_session  # both lead: separate elections
        one.execution_plan_store().put_execution_plan("job-1", Plan("1"))
        assert other.execution_plan_store().get_job_ids() == []
        assert other.execution_plan_store().recover_execution_plan("job-1") is None
        one.cleanup_all_data()
        assert one.client.exists("/flink/one") is None  # type: ignore[attr-defined]
        assert not (tmp_path / "one").exists()
        assert other.client.exists("/flink/other/leader/latch") is not None  # type: ignore[attr-defined]
        assert other_contender.events == [("grant", other_contender.leading_session)]  # undisturbed
    finally:
        one.close()
        other.close()


class PlanEvents:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def on_added_execution_plan(self, job_id: str) -> None:
        self.events.append(("added", job_id))

    def on_removed_execution_plan(self, job_id: str) -> None:
        self.events.append(("removed", job_id))


def test_a_standby_hears_about_plans_the_leader_adds_and_removes(zookeeper: Any, tmp_path: Path) -> None:
    conf = ha_config(zookeeper, tmp_path)
    leader, _ = _leader(conf)
    standby = create_ha_services(conf)
    try:
        heard = PlanEvents()
        standby.execution_plan_store().start(heard)
        leader.execution_plan_store().put_execution_plan("job-1", Plan("1"))
        wait_until(lambda: heard.events == [("added", "job-1")], "the added plan")
        leader.execution_plan_store().global_cleanup("job-1")
        wait_until(lambda: heard.events == [("added", "job-1"), ("removed", "job-1")], "the removed plan")
    finally:
        standby.close()
        leader.close()


def test_a_recovered_pointer_loads_the_checkpoint_it_points_to(zookeeper: Any, tmp_path: Path) -> None:
    from streamkernel.runtime.checkpoint.metadata import CheckpointMetadata

    checkpoint_dir = tmp_path / "checkpoints" / "chk-3"
    checkpoint_dir.mkdir(parents=True)
    metadata = CheckpointMetadata("job", "a job", 3, 1234, False, {}, {}, ())
    (checkpoint_dir / "_metadata").write_text(metadata.to_json())
    conf = ha_config(zookeeper, tmp_path / "ha")
    first, _ = _leader(conf)
    first.checkpoint_recovery_factory().create_completed_checkpoint_store("job", 1) \
        .add_checkpoint_and_subsume_oldest_one(CompletedCheckpointPointer(3, str(checkpoint_dir), 1234))
    second = _hand_over(first, conf)
    try:
        latest = second.checkpoint_recovery_factory().create_completed_checkpoint_store("job", 1).get_latest_checkpoint()
        assert latest is not None
        completed = latest.load()
        assert (completed.checkpoint_id, completed.path, completed.timestamp) == (3, str(checkpoint_dir), 1234)
    finally:
        second.close()
