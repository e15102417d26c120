"""Bad input to ``%flink`` is a one-line UsageError raised before anything happens, and the
kernel stays usable; the same mistakes through the Python API raise clear exceptions."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from streamkernel.common.job_status import select_jobs
from streamkernel.errors import InvalidProgramError
from streamkernel.jupyter import commands
from streamkernel.jupyter.widgets.models import find_job
from streamkernel.runtime.core.metrics import metric_rows
from streamkernel.runtime.minicluster.minicluster import MiniCluster, current_cluster
from streamkernel.testing import wait_until

SETUP = ("from streamkernel.common import WatermarkStrategy, Configuration\n"
         "from streamkernel.datastream.connectors.datagen import DataGeneratorSource\n")

UNBOUNDED = ("env.configure(Configuration.from_dict({'restart-strategy.type': 'fixed-delay',"
             " 'restart-strategy.fixed-delay.attempts': '5', 'restart-strategy.fixed-delay.delay': '0 ms'}))\n"
             "env.from_source(DataGeneratorSource(lambda i: i, count=None, rate_limiter_strategy=200.0),"
             " WatermarkStrategy.no_watermarks(), 'gen').map(lambda x: x).name('Work').add_sink(lambda v: None)")


def _usage_error(ip: InteractiveShell, line: str) -> str:
    with pytest.raises(UsageError) as caught:
        ip.run_line_magic("flink", line)
    message = str(caught.value)
    assert "\n" not in message, message
    return message


def _running_job(ip: InteractiveShell) -> Any:
    ip.run_line_magic("flink", "start --taskmanagers 1 --slots 2")
    ip.run_cell_magic("flink", "--show none --parallelism 2 --name forever", UNBOUNDED)
    ip.run_line_magic("flink", "submit")
    client = ip.user_ns["job"]
    wait_until(lambda: client.get_job_status().result().name == "RUNNING", message="the job to run")
    return client


# ------------------------------------------------------------------ cluster size
@pytest.mark.parametrize("line, fragment", [
    ("start --taskmanagers 100000 --backend process", "--taskmanagers 100000 is more than the process backend hosts"),
    ("start --slots 99999999999999999999", "--slots 99999999999999999999 is more than one TaskManager hosts"),
    ("start --taskmanagers 100000", "--taskmanagers 100000 is more than the local backend hosts: at most 256"),
    ("start --taskmanagers 3 --backend spark --master local[2]", "Spark cannot host 3 more TaskManagers"),
])
def test_start_refuses_a_cluster_its_backend_cannot_host_and_starts_nothing(shell, line: str, fragment: str) -> None:
    ip, _ = shell
    started = time.monotonic()
    message = _usage_error(ip, line)
    assert message.startswith("%flink start: ") and fragment in message
    assert time.monotonic() - started < 5  # refused, not started and stopped
    assert current_cluster() is None
    ip.run_line_magic("flink", "start --taskmanagers 1 --slots 1")  # the kernel is fine
    assert current_cluster() is not None and current_cluster().total_slots == 1


def test_start_names_the_key_that_raises_a_limit_and_takes_it_with_minus_d(shell) -> None:
    ip, _ = shell
    message = _usage_error(ip, "start --taskmanagers 4 --slots 300")
    assert "streamkernel.minicluster.max-slots-per-taskmanager" in message and "-D KEY=VALUE" in message
    ip.run_line_magic("flink", "start --taskmanagers 1 --slots 300 -D streamkernel.minicluster.max-slots-per-taskmanager=300")
    assert current_cluster().total_slots == 300
    ip.run_line_magic("flink", "stop")
    assert "expected KEY=VALUE" in _usage_error(ip, "start -D nonsense")


# ---------------------------------------------------------------------- job ids
@pytest.mark.parametrize("line", ["cancel ''", "cancel '   '", "metrics ''", "checkpoint ''", "savepoint ' '",
                                  "checkpoints ''", "dashboard ''", "results ''", "fail Work --job ''",
                                  "peek Work --job ''", "state '' Work", "reset --name ''", "submit --name ' '",
                                  "restore ''", "restore ./sp --name ''", "fail ''", "peek ' '",
                                  "kill-taskmanager ''", "savepoint --dir ''", "start --master ''",
                                  "state Work --state ''"])
def test_empty_ids_names_and_operators_are_refused_when_parsed(line: str) -> None:
    with pytest.raises(UsageError, match="expected a non-empty value"):
        commands.parse_line(line)


def test_empty_cell_name_is_refused() -> None:
    with pytest.raises(UsageError, match="%%flink: argument --name/-n: expected a non-empty value"):
        commands.parse_cell_options("--name ''")


def test_cancel_with_an_empty_id_cancels_nothing(shell) -> None:
    ip, _ = shell
    client = _running_job(ip)
    for line in ("cancel ''", "cancel ' '"):
        assert "expected a non-empty value" in _usage_error(ip, line)
    assert client.get_job_status().result().name == "RUNNING"
    ip.run_line_magic("flink", f"cancel {str(client.get_job_id())[:6].upper()}")  # a prefix, any case
    assert client.get_job_status().result().name == "CANCELED"


def test_the_one_job_matching_rule_refuses_blank_ids_in_the_python_api() -> None:
    jobs = [("3f00aa", "counts"), ("ab00cc", "3f")]
    for blank in ("", "  "):
        with pytest.raises(InvalidProgramError, match="would match every job"):
            select_jobs(blank, jobs, lambda j: j)
        with pytest.raises(InvalidProgramError):
            metric_rows({"jobs": [{"job_id": "3f00aa", "name": "counts", "vertices": []}]}, blank)
        with pytest.raises(InvalidProgramError):
            find_job({"jobs": [{"job_id": "3f00aa", "name": "counts"}]}, blank)
    assert select_jobs("3f", jobs, lambda j: j) == [("ab00cc", "3f")]  # a name wins over an id prefix
    assert select_jobs("3F0", jobs, lambda j: j) == [("3f00aa", "counts")]


# ------------------------------------------------------------------ metrics, peek
def test_metrics_of_an_unknown_job_is_an_error_naming_it(shell) -> None:
    ip, _ = shell
    ip.run_line_magic("flink", "start")
    message = _usage_error(ip, "metrics nosuchjob")
    assert "no job matches 'nosuchjob'" in message
    with pytest.raises(KeyError, match="no job 'nosuchjob'"):
        metric_rows(current_cluster().inspection.snapshot(), "nosuchjob")


@pytest.mark.parametrize("seconds", ["-1", "0", "nan", "inf", "soon"])
def test_peek_refuses_seconds_that_are_not_positive(seconds: str) -> None:
    with pytest.raises(UsageError, match="argument --seconds/-s: expected a positive number"):
        commands.parse_line(f"peek Work --seconds {seconds}")


@pytest.mark.parametrize("seconds", [-1, 0, float("nan"), float("inf"), True])
def test_minicluster_peek_refuses_seconds_that_are_not_positive(seconds: Any) -> None:
    with pytest.raises(ValueError, match="peek: seconds must be a number > 0"):
        MiniCluster(1, 1).inspection.peek("00" * 16, "Work", 20, seconds)


def test_parallelism_options_are_bounded_by_the_max_parallelism() -> None:
    with pytest.raises(UsageError, match="at most 32768"):
        commands.parse_cell_options("--parallelism 99999999999")
    with pytest.raises(UsageError, match="at most 32768"):
        commands.parse_line("restore ./sp -p 99999999999")


# -------------------------------------------------------------------------- fail
def test_fail_counts_subtasks_from_one_and_checks_them_against_the_parallelism(shell) -> None:
    ip, _ = shell
    client = _running_job(ip)
    message = _usage_error(ip, "fail Work --subtask 99")
    assert "runs 2 subtask(s), 1..2" in message and "there is no subtask 99" in message
    without_job_id = re.sub(r"[0-9a-f]{32}", "JOB", message)  # a random id may contain "98"
    assert "98" not in without_job_id and "0.." not in without_job_id
    assert client.get_job_details().num_restarts == 0
    ip.run_line_magic("flink", "fail Work --subtask 2")
    wait_until(lambda: client.get_job_details().num_restarts == 1, message="the job to restart after the injected failure")
    client.cancel().result(timeout=10)
