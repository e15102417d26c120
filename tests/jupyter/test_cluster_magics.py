"""%flink start / stop / jobs / submit / cancel / metrics and %%flink --submit through IPython."""

from __future__ import annotations

import threading

import pytest
from IPython.core.error import UsageError

from streamkernel.testing import wait_until

SETUP = ("from streamkernel.common import WatermarkStrategy\n"
         "from streamkernel.datastream.connectors.number_seq import NumberSequenceSource\n"
         "from streamkernel.datastream.connectors.datagen import DataGeneratorSource\n")


def _task_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if "(" in t.name and "/" in t.name]


def test_start_shows_every_slot_and_stop_leaves_no_thread(shell) -> None:
    ip, shown = shell
    ip.run_line_magic("flink", "start --taskmanagers 2 --slots 3")
    table = shown[-1]
    assert list(table["taskmanager"]) == [1, 1, 1, 2, 2, 2]
    assert ip.user_ns["cluster"].total_slots == 6
    with pytest.raises(UsageError, match="already running"):
        ip.run_line_magic("flink", "start")
    ip.run_line_magic("flink", "stop")
    assert not ip.user_ns["cluster"].is_running
    assert _task_threads() == []
    with pytest.raises(UsageError, match="no cluster is running"):
        ip.run_line_magic("flink", "jobs")


def test_submit_from_a_cell_runs_on_the_started_cluster_and_reports_metrics(shell) -> None:
    ip, shown = shell
    ip.run_line_magic("flink", "start --taskmanagers 1 --slots 2")
    ip.run_cell_magic("flink", "--show none --submit --name numbers --parallelism 2",
                      "env.from_source(NumberSequenceSource(1, 5000), WatermarkStrategy.no_watermarks(), 'n')"
                      ".map(lambda x: x + 1).add_sink(lambda v: None)")
    client = ip.user_ns["job"]
    result = client.get_job_execution_result().result(timeout=30)
    assert result.get_job_id() == client.get_job_id()
    ip.run_line_magic("flink", "jobs")
    jobs = shown[-1]
    assert list(jobs["name"]) == ["numbers"] and list(jobs["status"]) == ["FINISHED"]
    ip.run_line_magic("flink", "metrics numbers")
    metrics = shown[-1]
    source_rows = metrics[metrics["vertex"].str.startswith("Source: n")]
    assert source_rows["records_out"].sum() == 5000
    assert len(metrics) == 2  # one chained vertex at parallelism 2


def test_logs_shows_the_last_lines_of_the_clusters_log_file(shell, capsys) -> None:
    ip, _ = shell
    ip.run_line_magic("flink", "start --slots 1")
    cluster = ip.user_ns["cluster"]
    ip.run_cell_magic("flink", "--show none --parallelism 1 --name logged --reset",
                      "env.from_collection([1, 2]).map(str).add_sink(lambda v: None)\nenv.execute('logged')")
    capsys.readouterr()
    ip.run_line_magic("flink", "logs -n 2")
    header, *lines = capsys.readouterr().out.splitlines()
    total = len(cluster.jobmanager_log().splitlines())
    assert header == f"{cluster.log_file}: the last 2 of {total} lines"
    assert len(lines) == 2 and "Job 'logged' (" in lines[-1] and "switched from state RUNNING to FINISHED." in lines[-1]
    with pytest.raises(UsageError, match="expected a positive integer"):
        ip.run_line_magic("flink", "logs -n 0")
    ip.run_line_magic("flink", "stop")
    with pytest.raises(UsageError, match="^%flink logs: no cluster is running"):
        ip.run_line_magic("flink", "logs")


def test_cancel_stops_an_unbounded_job(shell) -> None:
    ip, shown = shell
    ip.run_line_magic("flink", "start --slots 1")
    ip.run_cell_magic("flink", "--show none --parallelism 1 --name forever",
                      "env.from_source(DataGeneratorSource(lambda i: i, count=None, rate_limiter_strategy=1000.0),"
                      " WatermarkStrategy.no_watermarks(), 'gen').add_sink(lambda v: None)")
    ip.run_line_magic("flink", "submit")
    wait_until(lambda: ip.user_ns["job"].get_job_status().result().name == "RUNNING", message="the job to be RUNNING")
    ip.run_line_magic("flink", "cancel forever")
    status = ip.user_ns["job"].get_job_status().result()
    assert status.name == "CANCELED"
    with pytest.raises(UsageError, match="no job matches"):
        ip.run_line_magic("flink", "cancel nothing-like-this")


def test_kill_taskmanager_and_fail_inject_failures_the_job_recovers_from(shell) -> None:
    ip, shown = shell
    ip.run_line_magic("flink", "start --taskmanagers 2 --slots 1")
    ip.run_cell_magic("flink", "--show none --parallelism 1 --name recovering",
                      "from streamkernel.common import Configuration\n"
                      "env.configure(Configuration.from_dict({'restart-strategy.type': 'fixed-delay',"
                      " 'restart-strategy.fixed-delay.attempts': '5', 'restart-strategy.fixed-delay.delay': '0 ms'}))\n"
                      "env.from_source(DataGeneratorSource(lambda i: i, count=None, rate_limiter_strategy=500.0),"
                      " WatermarkStrategy.no_watermarks(), 'gen').map(lambda x: x).name('Work').add_sink(lambda v: None)")
    ip.run_line_magic("flink", "submit")
    client = ip.user_ns["job"]
    wait_until(lambda: client.get_job_status().result().name == "RUNNING", message="the job to be RUNNING")
    ip.run_line_magic("flink", "fail Work")
    wait_until(lambda: client.get_job_details().num_restarts == 1 and client.get_job_status().result().name == "RUNNING",
               message="the job to be RUNNING after its first restart")
    with pytest.raises(UsageError, match="no operator|Work"):
        ip.run_line_magic("flink", "fail NoSuchOperator")
    taskmanager = next(i for i, row in enumerate(ip.user_ns["cluster"].inspection.taskmanagers) if any(s.job_id for s in row.slots))
    ip.run_line_magic("flink", f"kill-taskmanager {taskmanager + 1} --replace")
    wait_until(lambda: client.get_job_details().num_restarts == 2 and client.get_job_status().result().name == "RUNNING",
               message="the job to be RUNNING after its second restart")
    client.cancel().result(timeout=60)
