"""%flink peek and %flink state on a running job, through IPython, on the local and process backends."""

from __future__ import annotations

from typing import Any, Iterator

import pandas as pd
import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from streamkernel.jupyter import magics as magics_module
from streamkernel.testing import wait_until

JOB = """
from streamkernel.common import WatermarkStrategy
from streamkernel.datastream.connectors.datagen import DataGeneratorSource
from streamkernel.datastream.state import ValueStateDescriptor
from streamkernel.datastream import KeyedProcessFunction

class Total(KeyedProcessFunction):
    def open(self, runtime_context):
        self.total = runtime_context.get_state(ValueStateDescriptor("total", None))
    def process_element(self, value, ctx):
        self.total.update((self.total.value() or 0) + value[1])
        yield value[0], self.total.value()

words = env.from_source(DataGeneratorSource(lambda i: ('w%d' % (i % 3), 2), count=None, rate_limiter_strategy=400.0),
                        WatermarkStrategy.no_watermarks(), 'words').uid('words')
words.key_by(lambda p: p[0]).process(Total()).uid('totals').name('Totals').add_sink(lambda v: None)
"""


@pytest.fixture(params=["local", "process"])
def shell(request, monkeypatch: pytest.MonkeyPatch, tmp_path) -> Iterator[tuple[InteractiveShell, list[Any]]]:
    ip = InteractiveShell.instance()
    shown: list[Any] = []
    monkeypatch.setattr(magics_module, "display", lambda obj: shown.append(obj))
    monkeypatch.chdir(tmp_path)
    ip.run_line_magic("load_ext", "streamkernel")
    ip.run_line_magic("flink", "reset")
    ip.run_line_magic("flink", f"start --backend {request.param} --taskmanagers 2 --slots 1")
    yield ip, shown
    from streamkernel.runtime.minicluster.minicluster import current_cluster

    cluster = current_cluster()
    if cluster is not None and cluster.is_running:
        cluster.stop()


def _submit(ip) -> None:
    ip.run_cell_magic("flink", "--show none --parallelism 2 --submit --name debugged", JOB)
    cluster = ip.user_ns["cluster"]

    def running() -> bool:
        job = cluster.jobs()[-1]
        return job.status.name == "RUNNING" and all(
            s.state.name == "RUNNING" for v in cluster.get_job(job.job_id).get_job_details().vertices
            for s in v.subtasks)

    wait_until(running, message="the debugged job and all its subtasks to be RUNNING")


def test_peek_shows_what_an_operator_emits_from_every_subtask(shell) -> None:
    ip, shown = shell
    _submit(ip)
    ip.run_line_magic("flink", "peek totals -n 5 --seconds 5")
    frame = shown[-1]
    assert isinstance(frame, pd.DataFrame) and list(frame.columns) == ["subtask", "record", "timestamp"]
    # keys w0..w2 hash onto one or both subtasks
    assert set(frame["subtask"]) <= {"Totals -> Sink: Unnamed (1/2)", "Totals -> Sink: Unnamed (2/2)"}
    assert 1 <= len(frame) <= 10
    for word, total in frame["record"]:
        assert word in ("w0", "w1", "w2") and total % 2 == 0 and total > 0  # running totals of 2s
    ip.run_line_magic("flink", "peek words -n 3 --seconds 5")
    assert {record[1] for record in shown[-1]["record"]} == {2}
    with pytest.raises(UsageError, match="no operator named 'nope'.*'totals'"):
        ip.run_line_magic("flink", "peek nope")


def test_state_reads_the_keyed_state_of_the_running_job(shell) -> None:
    ip, shown = shell
    _submit(ip)

    def every_key_has_state() -> bool:
        ip.run_line_magic("flink", "state debugged totals")
        return set(shown[-1]["key"]) == {"w0", "w1", "w2"}

    wait_until(every_key_has_state, message="keyed state for w0, w1 and w2 (each key's first record processed)")
    frame = shown[-1]
    assert set(frame["key"]) == {"w0", "w1", "w2"} and set(frame["state"]) == {"total"}
    assert all(value > 0 and value % 2 == 0 for value in frame["value"])
    ip.run_line_magic("flink", "state totals --key w1")  # the only running job
    assert list(shown[-1]["key"]) == ["w1"] and shown[-1]["value"].iloc[0] >= frame.set_index("key")["value"]["w1"]
    with pytest.raises(UsageError, match="no keyed state named 'nope'"):
        ip.run_line_magic("flink", "state totals --state nope")
    assert ip.user_ns["cluster"].jobs()[-1].status.name == "RUNNING"  # looking did not stop it
