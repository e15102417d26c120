"""The routing table (templates, /v1, merging handlers of several modules) and the pure JSON
builders, without HTTP."""

from __future__ import annotations

import re
import sys
import types

import pytest

from streamkernel.common.options.rest import PORT_FALLBACK_COUNT, rest_port_range
from streamkernel.errors import IllegalConfigurationError
from streamkernel.runtime.rest.handlers.base import RestHandler
from streamkernel.runtime.rest.json_views.checkpoints import stats_summary
from streamkernel.runtime.rest.json_views.ids import vertex_id_of
from streamkernel.runtime.rest.json_views.io_metrics import aggregate, backpressure_level
from streamkernel.runtime.rest.routes import ROUTE_MODULES, collect_routes, template_pattern, tornado_rules


def test_a_template_matches_with_and_without_v1_and_names_its_parameters() -> None:
    pattern = re.compile(template_pattern("/jobs/:jobid/vertices/:vertexid"))
    for path in ("/jobs/ab/vertices/cd", "/v1/jobs/ab/vertices/cd", "/jobs/ab/vertices/cd/"):
        match = pattern.match(path)
        assert match is not None and match.groupdict() == {"jobid": "ab", "vertexid": "cd"}
    assert pattern.match("/jobs/ab/vertices/cd/metrics") is None
    with pytest.raises(ValueError, match="starts with '/'"):
        template_pattern("jobs")


def test_fixed_segments_win_over_parameters() -> None:
    rules = tornado_rules(context=types.SimpleNamespace(configuration={}), max_content_length=10)
    patterns = [rule[0] for rule in rules]
    assert patterns.index(template_pattern("/jobs/overview")) < patterns.index(template_pattern("/jobs/:jobid"))
    assert patterns[-1] == r"/(.*)"  # the dashboard's catch-all comes after every API route


def _module(monkeypatch: pytest.MonkeyPatch, name: str, routes: list) -> str:
    """A handler module ``name`` exporting ``routes`` (removed after the test)."""
    module = types.ModuleType(name)
    module.ROUTES = routes  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, name, module)
    return name


def test_two_modules_serving_one_path_with_different_methods_are_merged(monkeypatch: pytest.MonkeyPatch) -> None:
    class Reader(RestHandler):
        def get(self, jobid: str) -> None:
            """Read."""

    class Canceller(RestHandler):
        def patch(self, jobid: str) -> None:
            """Cancel."""

    routes, _ = collect_routes((_module(monkeypatch, "fake_reads", [("/jobs/:jobid", Reader)]),
                                _module(monkeypatch, "fake_actions", [("/jobs/:jobid", Canceller)])))
    [(template, merged)] = routes
    assert template == "/jobs/:jobid" and issubclass(merged, Reader) and issubclass(merged, Canceller)
    assert merged.get is Reader.get and merged.patch is Canceller.patch

    class AnotherReader(RestHandler):
        def get(self, jobid: str) -> None:
            """Read again."""

    with pytest.raises(ValueError, match="both handle GET"):
        collect_routes((_module(monkeypatch, "fake_reads2", [("/jobs/:jobid", Reader)]),
                        _module(monkeypatch, "fake_reads3", [("/jobs/:jobid", AnotherReader)])))


def test_every_module_serves_the_resources_of_the_issue() -> None:
    templates = {t for t, _ in collect_routes(ROUTE_MODULES)[0]}
    assert {"/config", "/overview", "/jobs", "/jobs/overview", "/jobs/:jobid", "/jobs/:jobid/plan",
            "/jobs/:jobid/config", "/jobs/:jobid/exceptions", "/jobs/:jobid/accumulators", "/jobs/:jobid/checkpoints",
            "/jobs/:jobid/checkpoints/config", "/jobs/:jobid/checkpoints/details/:checkpointid",
            "/jobs/:jobid/vertices/:vertexid", "/jobs/:jobid/vertices/:vertexid/backpressure",
            "/jobs/:jobid/vertices/:vertexid/watermarks", "/jobs/:jobid/vertices/:vertexid/subtasktimes",
            "/jobs/:jobid/vertices/:vertexid/taskmanagers", "/jobs/:jobid/vertices/:vertexid/metrics",
            "/jobs/:jobid/vertices/:vertexid/subtasks/metrics", "/jobs/:jobid/metrics", "/taskmanagers",
            "/taskmanagers/:taskmanagerid", "/taskmanagers/:taskmanagerid/metrics", "/jobmanager/config",
            "/jobmanager/metrics", "/applications/overview", "/jars"} <= templates


def test_rest_port_range() -> None:
    assert list(rest_port_range({})) == list(range(8081, 8081 + PORT_FALLBACK_COUNT))
    assert list(rest_port_range({"rest.port": "9000"}))[0] == 9000
    assert list(rest_port_range({"rest.bind-port": "9000-9001", "rest.port": "1"})) == [9000, 9001]
    assert list(rest_port_range({"rest.bind-port": "0"})) == [0]
    for bad in ("0-5", "9-8", "x", "70000"):
        with pytest.raises(IllegalConfigurationError, match="'rest.bind-port'"):
            rest_port_range({"rest.bind-port": bad})


def test_vertex_ids_are_32_hex_and_stable_without_a_graph() -> None:
    assert re.fullmatch(r"[0-9a-f]{32}", vertex_id_of(None, 3))
    assert vertex_id_of(None, 3) == vertex_id_of(None, 3) != vertex_id_of(None, 4)


def test_stats_summary_and_aggregates() -> None:
    summary = stats_summary([float(v) for v in range(1, 101)])
    assert (summary["min"], summary["max"], summary["avg"]) == (1, 100, 50)
    assert summary["p50"] == 51.0 and summary["p99"] == 100.0
    assert stats_summary([])["p999"] == 0.0
    assert aggregate([1.0, 3.0], ["min", "max", "sum", "avg"]) == {"min": 1.0, "max": 3.0, "sum": 4.0, "avg": 2.0}
    assert [backpressure_level(r) for r in (0.0, 0.1, 0.3, 0.9)] == ["ok", "ok", "low", "high"]


def test_backpressure_ratios_are_recent_once_an_earlier_request_saw_the_subtask() -> None:
    from streamkernel.runtime.core.deployment import ExecutionAttemptId, ExecutionState
    from streamkernel.runtime.resourcemanager.gateway import TaskManagerSnapshot
    from streamkernel.runtime.rest.context import RestContext
    from streamkernel.runtime.rest.json_views.io_metrics import ratios
    from streamkernel.runtime.taskmanager.gateway import SlotReport, TaskExecutorHeartbeat, TaskStatus

    attempt = ExecutionAttemptId("j" * 32, 1, 0, 0)
    second = 1_000_000_000
    beats: list[dict] = []

    class ResourceManager:
        def taskmanager_snapshots(self) -> tuple:
            status = TaskStatus(attempt, "Map (1/1)", 0, ExecutionState.RUNNING, beats[-1])
            beat = TaskExecutorHeartbeat("tm-1", SlotReport("tm-1", ()), (status,))
            return (TaskManagerSnapshot("tm-1", 0, 1, 0, 5, ("j" * 32,), beat),)

    context = RestContext(dispatcher=None, resource_manager=ResourceManager())  # type: ignore[arg-type]
    # 100 s without backpressure ...
    beats.append({"uptime_ns": 100 * second, "backpressured_ns": 0, "idle_ns": 90 * second, "busy_ns": 10 * second})
    first = context.live_metrics()[attempt][1]
    assert ratios(first) == (0.0, 0.9, 0.1)  # nothing earlier: the whole run
    # ... then 2 s fully backpressured: Flink's ratio is about now, not the average of the run
    beats.append({"uptime_ns": 102 * second, "backpressured_ns": 2 * second, "idle_ns": 90 * second,
                  "busy_ns": 10 * second})
    assert ratios(context.live_metrics()[attempt][1]) == (1.0, 0.0, 0.0)
