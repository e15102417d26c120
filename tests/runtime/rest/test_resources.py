"""The GET resources of the REST API against a running, checkpointing job: Flink's field names
(rest_v1_dispatcher.yml) with the job's real values."""

from __future__ import annotations

import re

from rest_job import RunningJob  # tests/runtime/ is on sys.path

from streamkernel.testing.waiting import wait_until

HEX32 = re.compile(r"^[0-9a-f]{32}$")


def _vertices(job: RunningJob) -> list[dict]:
    return job.client.ok(f"/jobs/{job.job_id}")["vertices"]


def test_config_and_overview(running_job: RunningJob) -> None:
    config = running_job.client.ok("/config")
    assert config["flink-version"] == "2.3.0" and config["refresh-interval"] == 3000
    assert set(config) >= {"timezone-name", "timezone-offset", "flink-revision", "features"}
    assert config["features"] == {"web-submit": False, "web-cancel": True, "web-rescale": False, "web-history": False}
    overview = running_job.client.ok("/overview")
    assert (overview["taskmanagers"], overview["slots-total"], overview["slots-available"]) == (2, 4, 2)
    assert (overview["jobs-running"], overview["jobs-finished"], overview["jobs-cancelled"], overview["jobs-failed"]) \
        == (1, 0, 0, 0)
    assert overview["flink-version"] == "2.3.0" and "flink-commit" in overview


def test_jobs_and_jobs_overview(running_job: RunningJob) -> None:
    assert running_job.client.ok("/jobs") == {"jobs": [{"id": running_job.job_id, "status": "RUNNING"}]}
    [job] = running_job.client.ok("/jobs/overview")["jobs"]
    assert (job["jid"], job["name"], job["state"], job["end-time"]) == (running_job.job_id, "rest job", "RUNNING", -1)
    assert job["duration"] >= 0 and job["last-modification"] >= job["start-time"] > 0
    assert job["tasks"]["total"] == 4 and job["tasks"]["running"] == 4
    # what Flink 2.3's JobDetails (flink list) requires: a missing int fails its strict mapper
    assert (job["jobType"], job["schedulerType"], job["pending-operators"]) == ("STREAMING", "Default", 0)
    assert set(job["tasks"]) == {"total", "created", "scheduled", "deploying", "running", "finished", "canceling",
                                 "canceled", "failed", "reconciling", "initializing", "pending"}


def test_job_details_with_vertices_metrics_and_plan(running_job: RunningJob) -> None:
    details = running_job.client.ok(f"/jobs/{running_job.job_id}")
    assert (details["jid"], details["name"], details["state"], details["job-type"], details["isStoppable"]) == \
        (running_job.job_id, "rest job", "RUNNING", "STREAMING", False)
    assert details["timestamps"]["RUNNING"] >= details["timestamps"]["CREATED"] > 0
    assert details["timestamps"]["FINISHED"] == 0 and details["now"] >= details["start-time"]
    names = [v["name"] for v in details["vertices"]]
    assert names == ["Source: numbers -> plus one", "Sink: discard"]
    for vertex in details["vertices"]:
        assert HEX32.match(vertex["id"]) and vertex["parallelism"] == 2 and vertex["status"] == "RUNNING"
        assert vertex["tasks"]["RUNNING"] == 2 and vertex["maxParallelism"] == 128
        assert set(vertex["metrics"]) >= {"read-bytes", "read-bytes-complete", "write-bytes", "write-bytes-complete",
                                          "read-records", "read-records-complete", "write-records",
                                          "write-records-complete"}
    assert details["status-counts"]["RUNNING"] == 2
    source, sink = details["vertices"]
    first = source["metrics"]["write-records"]
    wait_until(lambda: _vertices(running_job)[0]["metrics"]["write-records"] > first > 0,
               message="the source's written records to grow")
    wait_until(lambda: _vertices(running_job)[1]["metrics"]["read-records"] > 0, message="the sink to read records")
    plan = details["plan"]
    assert (plan["jid"], plan["name"], plan["type"]) == (running_job.job_id, "rest job", "STREAMING")
    assert [n["id"] for n in plan["nodes"]] == [source["id"], sink["id"]]
    assert "inputs" not in plan["nodes"][0]
    assert plan["nodes"][1]["inputs"] == [{"num": 0, "id": source["id"], "ship_strategy": "REBALANCE",
                                           "exchange": "pipelined_bounded"}]
    assert running_job.client.ok(f"/jobs/{running_job.job_id}/plan") == {"plan": plan}


def test_job_config_exceptions_accumulators_metrics(running_job: RunningJob) -> None:
    base = f"/jobs/{running_job.job_id}"
    config = running_job.client.ok(base + "/config")
    assert (config["jid"], config["name"]) == (running_job.job_id, "rest job")
    assert config["execution-config"]["job-parallelism"] == 2
    assert set(config["execution-config"]) == {"execution-mode", "restart-strategy", "job-parallelism",
                                               "object-reuse-mode", "user-config"}
    exceptions = running_job.client.ok(base + "/exceptions")
    assert exceptions["exceptionHistory"] == {"entries": [], "truncated": False}
    assert {"root-exception", "timestamp", "all-exceptions", "truncated"} <= set(exceptions)
    assert running_job.client.ok(base + "/accumulators")["user-task-accumulators"] == []
    ids = {m["id"] for m in running_job.client.ok(base + "/metrics")}
    assert {"numRestarts", "numberOfCompletedCheckpoints", "uptime"} <= ids
    [completed] = running_job.client.ok(base + "/metrics?get=numberOfCompletedCheckpoints")
    assert completed["id"] == "numberOfCompletedCheckpoints" and int(completed["value"]) > 0


def test_checkpoints_config_and_details(running_job: RunningJob) -> None:
    base = f"/jobs/{running_job.job_id}/checkpoints"
    stats = running_job.client.ok(base)
    assert stats["counts"]["completed"] > 0 and stats["counts"]["total"] >= stats["counts"]["completed"]
    assert set(stats["counts"]) == {"restored", "total", "in_progress", "completed", "failed"}
    for name in ("checkpointed_size", "state_size", "end_to_end_duration", "alignment_buffered", "processed_data",
                 "persisted_data"):
        assert set(stats["summary"][name]) == {"min", "max", "avg", "p50", "p90", "p95", "p99", "p999"}
    latest = stats["latest"]["completed"]
    assert latest["status"] == "COMPLETED" and latest["className"] == "completed"
    assert latest["num_acknowledged_subtasks"] == latest["num_subtasks"] == 4
    assert set(stats["latest"]) == {"completed", "savepoint", "failed", "restored"}
    assert stats["history"] and stats["history"][0]["id"] >= latest["id"]
    config = running_job.client.ok(base + "/config")
    assert (config["mode"], config["interval"], config["max_concurrent"]) == ("exactly_once", 150, 1)
    assert set(config["externalization"]) == {"enabled", "delete_on_cancellation"}
    assert {"state_backend", "checkpoint_storage", "unaligned_checkpoints", "tolerable_failed_checkpoints",
            "aligned_checkpoint_timeout", "checkpoints_after_tasks_finish", "state_changelog_enabled"} <= set(config)
    one = running_job.client.ok(f"{base}/details/{latest['id']}")
    assert one["id"] == latest["id"] and set(one["tasks"]) == {v["id"] for v in _vertices(running_job)}
    vertex = _vertices(running_job)[0]["id"]
    subtasks = running_job.client.ok(f"{base}/details/{latest['id']}/subtasks/{vertex}")
    assert [s["index"] for s in subtasks["subtasks"]] == [0, 1]
    assert running_job.client.get(f"{base}/details/999999")[0] == 404


def test_vertex_resources(running_job: RunningJob) -> None:
    source, sink = _vertices(running_job)
    base = f"/jobs/{running_job.job_id}/vertices/{source['id']}"
    vertex = running_job.client.ok(base)
    assert (vertex["id"], vertex["name"], vertex["parallelism"]) == (source["id"], source["name"], 2)
    for sub in vertex["subtasks"]:
        assert sub["status"] == "RUNNING" and sub["attempt"] == 0
        assert sub["taskmanager-id"].startswith("taskmanager-") and sub["endpoint"] == sub["taskmanager-id"]
        assert {"start-time", "end-time", "duration", "metrics"} <= set(sub)
    back = running_job.client.ok(f"/jobs/{running_job.job_id}/vertices/{sink['id']}/backpressure")
    assert back["status"] == "ok" and back["backpressureLevel"] == back["backpressure-level"]
    assert [s["subtask"] for s in back["subtasks"]] == [0, 1]
    assert {"attempt-number", "backpressureLevel", "ratio", "idleRatio", "busyRatio"} <= set(back["subtasks"][0])
    marks = running_job.client.ok(f"/jobs/{running_job.job_id}/vertices/{sink['id']}/watermarks")
    assert [m["id"] for m in marks] == ["0.currentInputWatermark", "1.currentInputWatermark"]
    assert all(isinstance(m["value"], str) for m in marks)
    times = running_job.client.ok(base + "/subtasktimes")
    assert [s["subtask"] for s in times["subtasks"]] == [0, 1] and "RUNNING" in times["subtasks"][0]["timestamps"]
    tms = running_job.client.ok(base + "/taskmanagers")
    assert sum(sum(t["status-counts"].values()) for t in tms["taskmanagers"]) == 2
    assert running_job.client.ok(base + "/flamegraph") == {"endTimestamp": -2}  # Flink's "disabled"
    assert running_job.client.get(f"/jobs/{running_job.job_id}/vertices/{'0' * 32}/flamegraph")[0] == 404


def test_vertex_metrics_by_subtask_and_aggregated(running_job: RunningJob) -> None:
    source = _vertices(running_job)[0]["id"]
    base = f"/jobs/{running_job.job_id}/vertices/{source}"
    ids = {m["id"] for m in running_job.client.ok(base + "/metrics")}
    assert {"0.numRecordsOut", "1.numRecordsOut", "0.busyTimeMsPerSecond"} <= ids
    values = running_job.client.ok(base + "/metrics?get=0.numRecordsOut,1.numRecordsOut,nope")
    assert [v["id"] for v in values] == ["0.numRecordsOut", "1.numRecordsOut"]
    assert all(isinstance(v["value"], str) and int(v["value"]) >= 0 for v in values)
    [agg] = running_job.client.ok(base + "/subtasks/metrics?get=numRecordsOut&agg=min,max,sum,avg")
    assert agg["id"] == "numRecordsOut" and set(agg) == {"id", "min", "max", "sum", "avg"}
    assert agg["min"] <= agg["avg"] <= agg["max"] <= agg["sum"]
    assert "numRecordsOut" in {m["id"] for m in running_job.client.ok(base + "/subtasks/metrics")}
    assert running_job.client.get(base + "/subtasks/metrics?get=numRecordsOut&agg=median")[0] == 400


def test_taskmanagers_and_jobmanager(running_job: RunningJob) -> None:
    tms = running_job.client.ok("/taskmanagers")["taskmanagers"]
    assert [t["id"] for t in tms] == ["taskmanager-1", "taskmanager-2"]
    assert [t["slotsNumber"] for t in tms] == [2, 2] and sum(t["freeSlots"] for t in tms) == 2
    wait_until(lambda: sum(t["assignedTasks"] for t in running_job.client.ok("/taskmanagers")["taskmanagers"]) == 4,
               message="the 4 running subtasks in the TaskManagers' heartbeats")
    for tm in tms:
        assert {"path", "dataPort", "jmxPort", "timeSinceLastHeartbeat", "totalResource", "freeResource",
                "hardware", "memoryConfiguration"} <= set(tm)
        assert set(tm["hardware"]) == {"cpuCores", "physicalMemory", "freeMemory", "managedMemory"}
    one = running_job.client.ok("/taskmanagers/taskmanager-1")
    assert one["id"] == "taskmanager-1" and "heapUsed" in one["metrics"]
    assert all(slot["jobId"] == running_job.job_id for slot in one["allocatedSlots"])

    def assigned_per_slot() -> list[int]:
        return [slot["assignedTasks"] for tm in ("taskmanager-1", "taskmanager-2")
                for slot in running_job.client.ok(f"/taskmanagers/{tm}")["allocatedSlots"]]
    # 2 vertices x parallelism 2, two subtasks per slot (slot sharing), as the heartbeats report them
    wait_until(lambda: assigned_per_slot() == [2, 2], message="the allocated slots' assignedTasks: 2 and 2")
    assert running_job.client.get("/taskmanagers/taskmanager-1/metrics")[0] == 200
    config = running_job.client.ok("/jobmanager/config")
    entries = {e["key"]: e["value"] for e in config}
    assert entries["taskmanager.numberOfTaskSlots"] == "2"
    assert entries["rest.port"] == str(running_job.cluster.rest_url.rsplit(":", 1)[1])
    [total] = running_job.client.ok("/jobmanager/metrics?get=taskSlotsTotal")
    assert total == {"id": "taskSlotsTotal", "value": "4"}
    [application] = running_job.client.ok("/applications/overview")["applications"]
    assert application["id"] == running_job.job_id and application["name"] == "SingleJobApplication(rest job)"
    assert application["status"] == "RUNNING" and application["jobs"] == {"RUNNING": 1}
    assert running_job.client.ok("/jars")["files"] == []


def test_a_running_jobs_duration_runs_to_now(running_job: RunningJob) -> None:
    """Flink: a running job's duration is the time since its start, not the time at its last status change."""
    def duration(path: str) -> int:
        body = running_job.client.ok(path)
        return int((body["jobs"][0] if "jobs" in body else body.get("applications", [body])[0])["duration"])

    for path in (f"/jobs/{running_job.job_id}", "/jobs/overview", "/applications/overview"):
        published = running_job.cluster.dispatcher.request_job_details(running_job.job_id).duration_ms
        floor = max(duration(path), published) + 1000
        wait_until(lambda p=path, f=floor: duration(p) > f, timeout=30,  # type: ignore[misc]
                   message=f"the duration in {path} to run on while the job runs")
    details = running_job.client.ok(f"/jobs/{running_job.job_id}")
    assert details["duration"] == details["now"] - details["start-time"]


def test_job_status_and_the_jobmanager_of_a_job(running_job: RunningJob) -> None:
    base = f"/jobs/{running_job.job_id}"
    assert running_job.client.ok(base + "/status") == {"status": "RUNNING"}
    entries = {e["key"]: e["value"] for e in running_job.client.ok(base + "/jobmanager/config")}
    assert entries["execution.checkpointing.interval"] in ("150", "150 ms") and entries["taskmanager.numberOfTaskSlots"] == "2"
    assert running_job.client.ok(base + "/jobmanager/environment") == running_job.client.ok("/jobmanager/environment")
    address = running_job.cluster.rest_url
    assert running_job.client.ok(base + "/jobmanager/log-url") == {"url": f"{address}/#/job-manager/logs"}
    assert running_job.client.ok(base + "/taskmanagers/taskmanager-1/log-url") == {
        "url": f"{address}/#/task-manager/taskmanager-1/logs"}
    assert running_job.client.get(base + "/taskmanagers/nobody/log-url")[0] == 404
    assert running_job.client.get(f"/jobs/{'0' * 32}/status")[0] == 404
    entries = {e["key"]: e["value"] for e in running_job.client.ok(f"/applications/{running_job.job_id}/jobmanager/config")}
    assert entries["taskmanager.numberOfTaskSlots"] == "2"
    assert running_job.client.ok("/datasets") == {"dataSets": []}


def test_job_metrics_are_the_jobs_state_times_and_checkpoints(running_job: RunningJob) -> None:
    base = f"/jobs/{running_job.job_id}"
    names = ("runningTime", "createdTime", "initializingTime", "deployingTime", "cancellingTime", "failingTime",
             "allSubTasksRunningOrFinishedTime", "numRescales", "lastCompletedCheckpointId",
             "lastCheckpointCompletedTimestamp", "lastCheckpointMetadataSize", "lastCheckpointPersistedData",
             "lastCheckpointProcessedData")
    values = {m["id"]: int(m["value"]) for m in running_job.client.ok(f"{base}/metrics?get={','.join(names)}")}
    assert set(values) == set(names)
    details = running_job.client.ok(base)
    assert values["runningTime"] >= details["now"] - details["timestamps"]["RUNNING"] - 2000 > 0
    assert values["allSubTasksRunningOrFinishedTime"] > 0 and values["runningTime"] >= values["allSubTasksRunningOrFinishedTime"]
    assert values["createdTime"] == values["initializingTime"] == values["deployingTime"] == 0
    assert values["cancellingTime"] == values["failingTime"] == values["numRescales"] == 0
    latest = running_job.client.ok(base + "/checkpoints")["latest"]["completed"]
    assert values["lastCompletedCheckpointId"] >= latest["id"] - 20 > 0
    assert values["lastCheckpointCompletedTimestamp"] >= latest["latest_ack_timestamp"] - 20 * 150
    assert values["lastCheckpointMetadataSize"] > 100  # the _metadata file's JSON
    [restarts] = running_job.client.ok("/jobs/metrics?get=numRestarts,nope&agg=sum,max")
    assert restarts == {"id": "numRestarts", "sum": 0.0, "max": 0.0}
    assert "runningTime" in {m["id"] for m in running_job.client.ok("/jobs/metrics")}
    assert running_job.client.ok(f"/jobs/metrics?get=numRestarts&jobs={'0' * 32}") == []
    [slots] = running_job.client.ok("/taskmanagers/metrics?get=Status.TaskSlots.Total&agg=sum,min")
    assert slots == {"id": "Status.TaskSlots.Total", "sum": 4.0, "min": 2.0}


def test_aggregated_subtask_figures_status_counts_and_times(running_job: RunningJob) -> None:
    source = _vertices(running_job)[0]["id"]
    base = f"/jobs/{running_job.job_id}/vertices/{source}"
    vertex = running_job.client.ok(base)
    written = [sub["metrics"]["write-records"] for sub in vertex["subtasks"]]
    aggregated = vertex["aggregated"]["metrics"]["write-records"]
    assert aggregated["sum"] == sum(written) and aggregated["min"] == min(written) and aggregated["max"] == max(written)
    assert aggregated["median"] == aggregated["avg"] == sum(written) // 2  # Flink's median of two: their mean
    assert (aggregated["p25"], aggregated["p75"], aggregated["p95"]) == (min(written), max(written), max(written))
    running = vertex["aggregated"]["status-duration"]["RUNNING"]
    assert running["min"] > 0 and set(vertex["aggregated"]["status-duration"]) == {
        "CREATED", "SCHEDULED", "DEPLOYING", "INITIALIZING", "RUNNING"}
    states = {"CREATED", "SCHEDULED", "DEPLOYING", "INITIALIZING", "RUNNING", "FINISHED", "CANCELING", "CANCELED",
              "FAILED", "RECONCILING"}
    for tm in running_job.client.ok(base + "/taskmanagers")["taskmanagers"]:
        assert set(tm["status-counts"]) == states and tm["status-counts"]["RECONCILING"] == 0
        assert tm["aggregated"]["metrics"]["write-records"]["sum"] == tm["metrics"]["write-records"]
    for sub in running_job.client.ok(base + "/subtasktimes")["subtasks"]:
        assert set(sub["timestamps"]) == states and sub["timestamps"]["FAILED"] == 0
        assert sub["timestamps"]["RUNNING"] >= sub["timestamps"]["CREATED"] > 0


def test_one_subtask_its_attempts_and_accumulators(running_job: RunningJob) -> None:
    source = _vertices(running_job)[0]["id"]
    base = f"/jobs/{running_job.job_id}/vertices/{source}/subtasks/1"
    sub = running_job.client.ok(base)
    assert (sub["subtask"], sub["attempt"], sub["status"]) == (1, 0, "RUNNING")
    assert sub["taskmanager-id"].startswith("taskmanager-") and sub["status-duration"]["RUNNING"] > 0
    attempt = running_job.client.ok(base + "/attempts/0")
    assert (attempt["subtask"], attempt["attempt"], attempt["start-time"]) == (1, 0, sub["start-time"])
    assert running_job.client.ok(base + "/attempts/0/accumulators") == {
        "subtask": 1, "attempt": 0, "id": f"{running_job.job_id}_{source}_1_0", "user-accumulators": []}
    assert running_job.client.get(base + "/attempts/1")[0] == 404
    assert running_job.client.get(f"/jobs/{running_job.job_id}/vertices/{source}/subtasks/2")[0] == 404
    assert running_job.client.get(f"/jobs/{running_job.job_id}/vertices/{source}/subtasks/x")[0] == 400
    ids = {m["id"] for m in running_job.client.ok(base + "/metrics")}
    assert {"numRecordsOut", "busyTimeMsPerSecond"} <= ids and not any(i.startswith("1.") for i in ids)
    assert running_job.client.ok(f"/jobs/{running_job.job_id}/vertices/{source}/jm-operator-metrics") == []


def test_a_vertexs_checkpoint_summary_writes_nan_as_flink_does(running_job: RunningJob) -> None:
    base = f"/jobs/{running_job.job_id}/checkpoints"
    latest = running_job.client.ok(base)["latest"]["completed"]["id"]
    vertex = _vertices(running_job)[0]["id"]
    body = running_job.client.ok(f"{base}/details/{latest}/subtasks/{vertex}")
    assert [s["className"] for s in body["subtasks"]] == ["completed", "completed"]
    duration = body["summary"]["end_to_end_duration"]
    assert duration["p50"] == duration["p999"] == "NaN"  # Jackson's NaN: a string
    assert duration["min"] <= duration["avg"] <= duration["max"]
    assert body["summary"]["alignment"]["buffered"]["p50"] == 0.0


def test_each_subtask_says_what_it_measured_of_a_checkpoint(running_job: RunningJob) -> None:
    """Flink's CheckpointMetrics of an acknowledgement: sync and async parts, alignment, start delay."""
    base = f"/jobs/{running_job.job_id}/checkpoints"
    latest = running_job.client.ok(base)["latest"]["completed"]
    for vertex in _vertices(running_job):
        body = running_job.client.ok(f"{base}/details/{latest['id']}/subtasks/{vertex['id']}")
        for sub in body["subtasks"]:
            assert sub["checkpoint"]["sync"] >= 0 and sub["checkpoint"]["async"] >= 0  # measured, not -1
            assert sub["alignment"]["duration"] >= 0 and sub["start_delay"] >= 0
            assert sub["start_delay"] <= sub["end_to_end_duration"]  # the barrier came before the acknowledgement
        sync = [s["checkpoint"]["sync"] for s in body["subtasks"]]
        assert body["summary"]["checkpoint_duration"]["sync"]["max"] == max(sync)
        assert body["summary"]["start_delay"]["min"] == min(s["start_delay"] for s in body["subtasks"])
