"""The spark backend refuses a local checkpoint directory its executors on several hosts cannot share."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from streamkernel.errors import IllegalConfigurationError
from streamkernel.runtime.taskmanager.spark_storage import check_shared_checkpoint_storage, shared_storage_problem


@pytest.mark.parametrize("directory, hosts, refused", [
    ("/tmp/chk", [], False),                          # no executor yet (or a local master)
    ("/tmp/chk", ["w1", "w1", "w1"], False),          # several executors, one host
    ("file:///tmp/chk", ["w1"], False),
    ("/tmp/chk", ["w1", "w2"], True),
    ("file:///tmp/chk", ["w1", "w2", "w1"], True),
    ("s3://bucket/chk", ["w1", "w2"], False),         # shared storage
    ("hdfs://nn/chk", ["w1", "w2"], False),
])
def test_a_local_directory_is_refused_only_when_executors_span_hosts(directory, hosts, refused) -> None:
    problem = shared_storage_problem(directory, hosts)
    assert (problem is not None) is refused
    if refused:
        assert "w1, w2" in problem and "2 hosts" in problem and "execution.checkpointing.dir" in problem


class _Summaries:
    def __init__(self, entries: list) -> None:
        self._entries = entries

    def size(self) -> int:
        return len(self._entries)

    def apply(self, i: int) -> object:
        executor_id, host_port = self._entries[i]
        return SimpleNamespace(id=lambda: executor_id, hostPort=lambda: host_port)


def _context(master: str, entries: list) -> object:
    store = SimpleNamespace(executorList=lambda active: _Summaries(entries))
    return SimpleNamespace(master=master, _jsc=SimpleNamespace(sc=lambda: SimpleNamespace(statusStore=lambda: store)))


def test_the_launcher_check_reads_the_executors_hosts(tmp_path) -> None:
    entries = [("driver", "d:1"), ("1", "10.0.0.1:4041"), ("2", "10.0.0.2:4041")]
    conf = {"execution.checkpointing.dir": str(tmp_path)}
    with pytest.raises(IllegalConfigurationError, match=r"^spark backend: the checkpoint directory .* 2 hosts "
                                                        r"\(10.0.0.1, 10.0.0.2\)"):
        check_shared_checkpoint_storage(_context("spark://m:7077", entries), conf)
    check_shared_checkpoint_storage(_context("local[2,4]", entries), conf)  # one machine: never refused
    check_shared_checkpoint_storage(_context("spark://m:7077", entries), {"execution.checkpointing.dir": "memory://c"})
