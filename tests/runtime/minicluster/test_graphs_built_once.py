"""A submission builds its JobGraph and its ExecutionGraph once, and hands them on (issue 14)."""

from __future__ import annotations

import sys
from collections import Counter
from typing import Any, Callable

import pytest

from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.graph import execution_graph as execution_graph_module
from streamkernel.graph import job_graph as job_graph_module
from streamkernel.runtime.minicluster import client as _client  # noqa: F401 - imported before patching (it is imported lazily)
from streamkernel.runtime.minicluster.minicluster import MiniCluster


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> Counter:
    """Counts calls of build_job_graph and build_execution_graph, wherever a module of
    streamkernel looks them up (each caller imports the function into its own namespace; every
    caller's module is imported before: one imported while patched would keep the wrapper)."""
    calls: Counter = Counter()

    def counted(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            calls[name] += 1
            return original(*args, **kwargs)
        return wrapper

    for original in (job_graph_module.build_job_graph, execution_graph_module.build_execution_graph):
        wrapper = counted(original.__name__, original)
        for module in list(sys.modules.values()):
            if (getattr(module, "__name__", "") or "").startswith("streamkernel") \
                    and getattr(module, original.__name__, None) is original:
                monkeypatch.setattr(module, original.__name__, wrapper)
    return calls


def _job(seen: list[int]) -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    env.from_collection(list(range(10))).map(lambda x: x + 1).add_sink(seen.append)
    return env


def test_execute_on_the_local_default_builds_each_graph_once(builds: Counter) -> None:
    seen: list[int] = []
    _job(seen).execute("once, transient")
    assert sorted(seen) == list(range(1, 11))
    assert builds == Counter(build_job_graph=1, build_execution_graph=1)


def test_execute_on_a_running_minicluster_builds_each_graph_once(builds: Counter) -> None:
    seen: list[int] = []
    with MiniCluster(1, 2):
        _job(seen).execute("once, on a MiniCluster")
    assert sorted(seen) == list(range(1, 11))
    assert builds == Counter(build_job_graph=1, build_execution_graph=1)


def test_execute_async_on_the_local_default_builds_each_graph_once(builds: Counter) -> None:
    seen: list[int] = []
    client = _job(seen).execute_async("once, async")
    client.get_job_execution_result().result(timeout=60)
    assert sorted(seen) == list(range(1, 11))
    assert builds == Counter(build_job_graph=1, build_execution_graph=1)


def test_execute_and_collect_on_the_local_default_builds_each_graph_once(builds: Counter) -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    with env.from_collection([1, 2, 3]).map(lambda x: x * 10).execute_and_collect("once, collect") as results:
        assert sorted(results) == [10, 20, 30]
    assert builds == Counter(build_job_graph=1, build_execution_graph=1)
