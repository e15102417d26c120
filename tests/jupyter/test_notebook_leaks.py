"""The notebook layer keeps nothing alive it should not: a stopped, dropped cluster is
collected although the cockpit showed it, and reloading the extension does not run the
cell hooks twice."""

from __future__ import annotations

import gc
import weakref
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell

from streamkernel.jupyter.cockpit_commands import CockpitCommands
from streamkernel.jupyter.widgets.cockpit import ClusterView, JobDashboard
from streamkernel.jupyter.widgets.refresher import refresher_for
from streamkernel.testing import wait_until

LIVE_COCKPIT = True  # the conftest's shell gives live widgets, as under a notebook frontend
SETUP = ("from streamkernel.common import WatermarkStrategy\n"
         "from streamkernel.datastream.connectors.datagen import DataGeneratorSource\n")


def _holders(ref: "weakref.ref[Any]") -> list[str]:
    """The types of what still holds ``ref``'s object (empty once it was collected)."""
    target = ref()
    return [] if target is None else [type(r).__name__ for r in gc.get_referrers(target)]


def _show_run_and_stop(ip: InteractiveShell, shown: list[Any]) -> tuple["weakref.ref[Any]", list[Any]]:
    """Start a cluster, show it and a job's dashboard live, stop it; a weak reference to it, and the views.

    A function of its own: IPython's run_line_magic snapshots its caller's locals (to expand
    ``{variables}``), and such a snapshot of a frame still running would hold the cluster."""
    ip.run_line_magic("flink", "start --taskmanagers 1 --slots 1")
    ip.run_cell_magic("flink", "--show none --submit --name watched",
                      "env.from_source(DataGeneratorSource(lambda i: i, count=None, rate_limiter_strategy=100.0), "
                      "WatermarkStrategy.no_watermarks(), 'gen').add_sink(lambda v: None)")
    views = [v for v in shown if isinstance(v, (ClusterView, JobDashboard))]
    assert {type(v) for v in views} == {ClusterView, JobDashboard}  # both views hang on the refresher
    wait_until(lambda: all(v.refreshes for v in views), message="both live views to be refreshed")
    ip.run_line_magic("flink", "stop")
    assert not refresher_for(ip.user_ns["cluster"]).running
    return weakref.ref(ip.user_ns.pop("cluster")), views


def test_a_stopped_and_dropped_cluster_is_collected_although_the_cockpit_showed_it(shell) -> None:
    ip, shown = shell
    collected, views = _show_run_and_stop(ip, shown)
    ip.user_ns.pop("job", None)
    gc.collect()
    holders = _holders(collected)
    assert holders == [], f"the stopped cluster is still referenced by {holders}"
    assert views[0].model is not None and views[0].fallback_html()  # the views keep their last picture
    with pytest.raises(ReferenceError, match="stopped and garbage-collected"):
        _ = views[0].cluster


def test_reloading_the_extension_registers_each_cell_hook_once(shell, monkeypatch: pytest.MonkeyPatch) -> None:
    ip, _ = shell
    calls: list[str] = []
    monkeypatch.setattr(CockpitCommands, "before_cell", lambda self, *a: calls.append("pre"))
    monkeypatch.setattr(CockpitCommands, "after_cell", lambda self, *a: calls.append("post"))
    try:
        ip.run_line_magic("reload_ext", "streamkernel")
        ip.run_line_magic("reload_ext", "streamkernel")
        calls.clear()
        ip.run_cell("x = 1")
        assert calls == ["pre", "post"]
        hooks = [c for event in ("pre_run_cell", "post_run_cell") for c in ip.events.callbacks[event]
                 if isinstance(getattr(c, "__self__", None), CockpitCommands)]
        assert len(hooks) == 2
        ip.run_line_magic("unload_ext", "streamkernel")
        calls.clear()
        ip.run_cell("x = 2")
        assert calls == []
        ip.run_line_magic("load_ext", "streamkernel")
        ip.run_cell("x = 3")
        assert calls == ["pre", "post"]
    finally:  # the shell outlives the test: give it hooks bound to the real methods again
        monkeypatch.undo()
        ip.run_line_magic("reload_ext", "streamkernel")
