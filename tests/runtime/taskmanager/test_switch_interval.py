"""A TaskManager process runs with a short Python switch interval (streamkernel.taskmanager.switch-interval).

With Python's 5 ms, a network thread waking up from a read waited up to 5 ms for the GIL
behind busy task threads at every hop of a batch and its credit between TaskManagers.
"""

from __future__ import annotations

import sys

import pytest

from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.runtime.minicluster.minicluster import MiniCluster
from streamkernel.runtime.taskmanager.process import ProcessTaskManagerLauncher

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process TaskManagers")

KEY = "streamkernel.taskmanager.switch-interval"


def switch_interval_here(_: int) -> float:
    """The switch interval of the process this record is mapped in."""
    return sys.getswitchinterval()


def _intervals_in_taskmanagers(configuration: dict) -> set:
    with MiniCluster(2, 1, backend="process", configuration=configuration):
        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(2)
        return set(env.from_collection([1, 2, 3, 4]).rebalance().map(switch_interval_here)
                   .execute_and_collect("switch interval"))


def test_taskmanager_processes_use_one_millisecond_by_default() -> None:
    driver = sys.getswitchinterval()
    assert _intervals_in_taskmanagers({}) == {0.001}
    assert sys.getswitchinterval() == driver  # the driver (a notebook's kernel) keeps its own


def test_the_interval_is_configurable() -> None:
    assert _intervals_in_taskmanagers({KEY: "3 ms"}) == {0.003}


def test_a_non_positive_interval_is_refused_before_any_process_starts() -> None:
    from streamkernel.runtime.taskmanager.worker import switch_interval_seconds

    with pytest.raises(ValueError, match=f"configuration key {KEY}: the switch interval must be positive, got 0 ms"):
        ProcessTaskManagerLauncher().launch(["taskmanager-1"], 1, ("127.0.0.1", 1), b"secret", {KEY: "0 ms"})
    assert switch_interval_seconds({}) == 0.001
