"""The cockpit's widgets: the cluster view and the job dashboard (ipywidgets).

Each widget draws the models of :mod:`.models` with the HTML of :mod:`.html` into
``ipywidgets.HTML`` parts, and is redrawn by the cluster's :class:`~.refresher.Refresher`.
Where no widget frontend runs (nbconvert, GitHub, a notebook opened without its kernel) the
output's ``text/html`` shows the last picture instead: every widget adds it to its
mimebundle, next to the widget view. Buttons never block the kernel: what they start (a
savepoint, a restore) runs on a thread and reports in the panel's message line.

* :class:`ClusterView`: ``%flink start``, ``%flink slots``: TaskManager cards and slots (and an
  HA panel, as ``%flink ha``, when the cluster is highly available).
* :class:`JobDashboard`: a submitted job: status, the JobGraph coloured by backpressure
  with records in/out per second, vertex and subtask tables with sparklines, the
  checkpoint panel (Trigger checkpoint, Savepoint, Stop with savepoint, Restore from
  selected, Cancel job, Kill a TaskManager) and the live results of its collect or pandas
  sinks. ``parts`` picks some of them (``%flink metrics --live``, ``%flink checkpoints``,
  ``%flink results``).
"""

from __future__ import annotations

import dataclasses
import threading
import time
import weakref
from typing import Any, Callable, Optional, Sequence

import ipywidgets as widgets

from streamkernel.common.futures import result_within
from streamkernel.jupyter.widgets import html
from streamkernel.jupyter.widgets.history import MetricsHistory
from streamkernel.jupyter.widgets.models import (
    BACKPRESSURE_COLOURS,
    JobModel,
    cluster_model,
    find_job,
    job_model,
)

__all__ = ["ClusterView", "JobDashboard", "JOB_PARTS", "job_graph_svg", "results_frame"]

#: The parts of a job dashboard, in display order.
JOB_PARTS = ("header", "graph", "vertices", "subtasks", "checkpoints", "results")

_GRAPH_EVERY_S = 2.0  # the JobGraph picture is redrawn at most this often (graphviz runs each time)
_HA_EVERY_S = 2.0  # the HA panel reads ZooKeeper at most this often
_RESULT_ROWS = 20


class _LiveWidget(widgets.VBox):
    """A VBox redrawn from snapshots; its ``text/html`` fallback is the last picture."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._closed = False
        self.refreshes = 0

    # ipywidgets keeps every widget until it is closed: a view holds its cluster weakly, so a
    # stopped cluster the notebook dropped can be collected although its last picture stays.
    _cluster_ref: Optional["weakref.ref[Any]"] = None

    @property
    def cluster(self) -> Any:
        """The cluster shown (ReferenceError once it was stopped, dropped and collected)."""
        cluster = self._cluster_ref() if self._cluster_ref is not None else None
        if cluster is None:
            raise ReferenceError("the cluster of this view was stopped and garbage-collected; start one with "
                                 "%flink start")
        return cluster

    @cluster.setter
    def cluster(self, cluster: Any) -> None:
        self._cluster_ref = weakref.ref(cluster)

    def close(self) -> None:
        """Close the widget: the refresher drops it."""
        self._closed = True
        super().close()

    @property
    def done(self) -> bool:
        """True once closed (subclasses add their own end)."""
        return self._closed

    def fallback_html(self) -> str:
        """What a frontend without widgets shows."""
        raise NotImplementedError

    def fallback_text(self) -> str:
        """What a plain-text frontend shows."""
        raise NotImplementedError

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        bundle = super()._repr_mimebundle_(**kwargs)
        data = bundle[0] if isinstance(bundle, tuple) else bundle
        if isinstance(data, dict):
            data["text/html"] = self.fallback_html()
            data["text/plain"] = self.fallback_text()
        return bundle


class ClusterView(_LiveWidget):
    """TaskManager cards with their slot grids, redrawn live; for a highly available cluster (one
    with ZooKeeper ``ha_services``) an "HA" panel below: leader, contenders, persisted jobs."""

    def __init__(self, cluster: Any) -> None:
        self.cluster = cluster
        self.model: Any = None
        self._html = widgets.HTML()
        self.ha_panel: Optional[widgets.HTML] = None
        self._ha_read_at = 0.0
        if hasattr(getattr(cluster, "ha_services", None), "paths"):
            self.ha_panel = widgets.HTML()
        super().__init__(children=[self._html] + ([self.ha_panel] if self.ha_panel is not None else []))
        self._stopped = False
        self.add_class("sk-cluster-view")

    def refresh(self, snapshot: dict, history: MetricsHistory) -> None:
        """Redraw from a snapshot (the HA panel from ZooKeeper, at most every ``_HA_EVERY_S``)."""
        model = cluster_model(snapshot)
        self.model = model
        self._stopped = not model.running
        value = html.cluster_html(model)
        if value != self._html.value:
            self._html.value = value
        if self.ha_panel is not None and time.monotonic() - self._ha_read_at >= _HA_EVERY_S:
            self._ha_read_at = time.monotonic()
            from streamkernel.jupyter.ha_commands import ha_panel_html

            self._set_html(self.ha_panel, ha_panel_html(self.cluster))
        self.refreshes += 1

    @staticmethod
    def _set_html(widget: Any, value: str) -> None:
        if value != widget.value:
            widget.value = value

    @property
    def done(self) -> bool:
        """Closed, or the cluster stopped."""
        return self._closed or self._stopped

    def fallback_html(self) -> str:
        """The last picture."""
        return self._html.value + (self.ha_panel.value if self.ha_panel is not None else "")

    def fallback_text(self) -> str:
        """The last picture as text."""
        from streamkernel.jupyter.widgets.text import cluster_text

        return cluster_text(self.model) if self.model is not None else "ClusterView()"


def job_graph_svg(cluster: Any, model: JobModel) -> Optional[str]:
    """The job's JobGraph as SVG: vertices filled by backpressure level, labelled with their
    records in/out per second; None when graphviz's ``dot`` is missing or the job is gone."""
    from streamkernel.viz.display import dot_available, to_svg
    from streamkernel.viz.render_graphs import render_job_graph

    if not dot_available():
        return None
    try:
        job_graph = cluster.dispatcher.request_job_details(model.job_id).require_job_graph()
    except Exception:  # noqa: BLE001 - the cluster stopped, or the job is unknown
        return None
    rendered = render_job_graph(job_graph)
    by_id = {f"v{v.id}": v for v in model.vertices}
    nodes = []
    for node in rendered.nodes:
        vertex = by_id.get(node.id)
        if vertex is None:
            nodes.append(node)
            continue
        level = vertex.backpressure_level
        lines = node.lines + (f"in {html.format_rate(vertex.records_in_per_s)}  out "
                              f"{html.format_rate(vertex.records_out_per_s)}",
                              f"backpressure {level} ({vertex.backpressured * 100:.0f}%)")
        nodes.append(dataclasses.replace(node, lines=lines, fill=BACKPRESSURE_COLOURS[level]))
    return to_svg(dataclasses.replace(rendered, nodes=tuple(nodes)))


def results_frame(cluster: Any, job_id: str, rows: int = _RESULT_ROWS) -> Optional[tuple[Any, int]]:
    """(the last ``rows`` records of the job's collect or pandas sink as a DataFrame, how many
    arrived), or None when the job has no such sink."""
    from streamkernel.datastream.connectors.collect import CollectSink
    from streamkernel.datastream.connectors.pandas import PandasSink, records_to_dataframe

    try:
        stream_graph = cluster.dispatcher.request_job_details(job_id).require_job_graph().stream_graph
    except Exception:  # noqa: BLE001
        return None
    for node in stream_graph.sinks:
        sink = getattr(node.operator, "sink", None)
        if isinstance(sink, CollectSink):
            recent, total = sink.buffer.recent_and_total(rows)
            return records_to_dataframe(recent), total
        if isinstance(sink, PandasSink):
            return sink.tail(rows)
    return None


class JobDashboard(_LiveWidget):
    """One job, live: see the module docstring. ``parts`` chooses what is shown (:data:`JOB_PARTS`)."""

    def __init__(self, cluster: Any, job_id: str, parts: Sequence[str] = JOB_PARTS,
                 on_restored: Optional[Callable[[Any], None]] = None) -> None:
        unknown = [p for p in parts if p not in JOB_PARTS]
        if unknown:
            raise ValueError(f"JobDashboard: unknown part(s) {unknown}; known: {list(JOB_PARTS)}")
        self.cluster = cluster
        self.job_id = job_id
        self.parts = tuple(parts)
        self.model: Optional[JobModel] = None
        self.on_restored = on_restored
        self._ended = False
        self._graph_drawn_at = 0.0
        self._html = {part: widgets.HTML() for part in self.parts if part != "checkpoints"}
        children: list[Any] = [self._html[p] for p in self.parts if p in ("header", "graph", "vertices", "subtasks")]
        if "checkpoints" in self.parts:
            children.append(self._checkpoint_panel())
        if "results" in self.parts:
            children.append(self._html["results"])
        super().__init__(children=children)
        self.add_class("sk-job-dashboard")

    # ------------------------------------------------------------------ panel
    def _checkpoint_panel(self) -> widgets.VBox:
        self._checkpoints_html = widgets.HTML()
        self.message = widgets.HTML()
        label = {"description_width": "initial"}
        self.restore_choice = widgets.Dropdown(description="Restore point", options=[], style=label,
                                               layout={"width": "480px"})
        self.taskmanager_choice = widgets.Dropdown(description="TaskManager", options=[], style=label,
                                                   layout={"width": "260px"})
        fit = {"width": "auto"}
        self.buttons = {
            "checkpoint": widgets.Button(description="Trigger checkpoint", icon="camera", layout=fit),
            "savepoint": widgets.Button(description="Savepoint", icon="save", layout=fit),
            "stop": widgets.Button(description="Stop with savepoint", icon="stop", layout=fit),
            "restore": widgets.Button(description="Restore from selected", icon="history", layout=fit),
            "cancel": widgets.Button(description="Cancel job", icon="times", button_style="warning", layout=fit),
            "kill": widgets.Button(description="Kill TaskManager", icon="bolt", button_style="danger", layout=fit),
        }
        actions = {"checkpoint": self.trigger_checkpoint, "savepoint": self.trigger_savepoint,
                   "stop": self.stop_with_savepoint, "restore": self.restore_selected, "cancel": self.cancel,
                   "kill": self.kill_taskmanager}
        for name, button in self.buttons.items():
            button.add_class(f"sk-button-{name}")
            button.on_click(lambda _b, action=actions[name]: self._in_background(action))
        row1 = widgets.HBox([self.buttons["checkpoint"], self.buttons["savepoint"], self.buttons["stop"],
                             self.buttons["cancel"]])
        row2 = widgets.HBox([self.restore_choice, self.buttons["restore"]])
        row3 = widgets.HBox([self.taskmanager_choice, self.buttons["kill"]])
        return widgets.VBox([self._checkpoints_html, row1, row2, row3, self.message])

    def _in_background(self, action: Callable[[], str]) -> threading.Thread:
        """Run a button's action on a thread; its outcome (or error) goes to the message line."""
        def run() -> None:
            try:
                text = action()
                self.message.value = f'<span class="sk-message">{html._e(text)}</span>'
            except Exception as error:  # noqa: BLE001 - shown to the user, not raised into the kernel
                self.message.value = (f'<span class="sk-message" style="color:#c62828">'
                                      f'{html._e(type(error).__name__)}: {html._e(error)}</span>')
            self._refresh_now()

        self.message.value = '<span class="sk-message sk-muted">working ...</span>'
        thread = threading.Thread(target=run, name="streamkernel-cockpit-action", daemon=True)
        thread.start()
        return thread

    def _refresh_now(self) -> None:
        from streamkernel.jupyter.widgets.refresher import refresher_for

        cluster = self._cluster_ref() if self._cluster_ref is not None else None
        if cluster is not None and cluster.is_running:
            refresher_for(cluster).refresh_once([self])

    # ---------------------------------------------------------------- actions
    def trigger_checkpoint(self) -> str:
        """Take a checkpoint now; returns what to tell the user."""
        path = self.cluster.checkpoints.trigger_checkpoint(self.job_id)
        return f"Checkpoint completed: {path}"

    def trigger_savepoint(self) -> str:
        """Take a savepoint (the job keeps running)."""
        return f"Savepoint written: {self.cluster.checkpoints.trigger_savepoint(self.job_id)}"

    def stop_with_savepoint(self) -> str:
        """Stop the job with a synchronous savepoint (it ends FINISHED)."""
        return f"Stopped with savepoint {self.cluster.checkpoints.stop_with_savepoint(self.job_id)}"

    def cancel(self) -> str:
        """Cancel the job."""
        result_within(self.cluster.get_job(self.job_id).cancel(), 10)
        return f"Cancelled job {self.job_id}."

    def kill_taskmanager(self) -> str:
        """Kill the TaskManager chosen in the dropdown (failure injection)."""
        chosen = self.taskmanager_choice.value
        if not chosen:
            raise ValueError("choose a TaskManager first")
        return f"Killed {self.cluster.failures.kill_taskmanager(chosen)}; the job recovers by its restart strategy."

    def restore_selected(self) -> str:
        """Start the job again from the selected checkpoint or savepoint (cancelling it first if it
        runs); the dashboard then follows the new job."""
        from streamkernel.runtime.checkpoint.storage import load_checkpoint

        path = self.restore_choice.value
        if not path:
            raise ValueError("choose a completed checkpoint or savepoint first")
        completed = load_checkpoint(path)  # a clear error for a missing or corrupt one, before anything is cancelled
        stream_graph = self.cluster.dispatcher.request_job_details(self.job_id).require_job_graph().stream_graph
        if self.model is not None and not self.model.ended:
            if not completed.is_savepoint:  # the job's own checkpoints go with it when it is cancelled: keep a copy
                path = _retain(path, stream_graph.configuration, self.job_id, completed.checkpoint_id)
            result_within(self.cluster.get_job(self.job_id).cancel(), 10)
        restored = dataclasses.replace(
            stream_graph, configuration={**stream_graph.configuration, "execution.state-recovery.path": path})
        client = self.cluster.submit(restored)
        old = self.job_id
        self.job_id = str(client.get_job_id())
        self._ended = False
        if self.on_restored is not None:
            self.on_restored(client)
        return f"Job {old[:8]} restored from {path} as job {self.job_id}."

    # ---------------------------------------------------------------- refresh
    def refresh(self, snapshot: dict, history: MetricsHistory) -> None:
        """Redraw every part from a snapshot."""
        job = find_job(snapshot, self.job_id)
        if job is None:
            self._ended = not snapshot.get("running") or self.model is not None
            return
        model = self.model = job_model(job, history)
        self._ended = model.ended
        if "header" in self.parts:
            self._set(self._html["header"], html.job_header_html(model))
        if "graph" in self.parts and (model.ended or time.monotonic() - self._graph_drawn_at >= _GRAPH_EVERY_S):
            self._graph_drawn_at = time.monotonic()
            svg = job_graph_svg(self.cluster, model)  # without graphviz: the vertex table stands in for it
            fallback = html.vertices_html(model) if "vertices" not in self.parts else ""
            self._set(self._html["graph"], f'<div class="sk-job-graph">{svg}</div>' if svg else fallback)
        if "vertices" in self.parts:
            self._set(self._html["vertices"], html.vertices_html(model))
        if "subtasks" in self.parts:
            self._set(self._html["subtasks"], html.subtasks_html(model))
        if "checkpoints" in self.parts:
            self._set(self._checkpoints_html, html.checkpoints_html(model))
            completed = [(f"{c.type} {c.id}: {c.path}", c.path) for c in model.checkpoints
                         if c.status == "COMPLETED" and c.path]
            if [v for _, v in completed] != [v for _, v in self.restore_choice.options]:
                chosen = self.restore_choice.value
                self.restore_choice.options = completed
                self.restore_choice.value = chosen if chosen in dict(completed).values() else (
                    completed[0][1] if completed else None)  # the newest by default
            live = [tm["id"] for tm in snapshot.get("taskmanagers", ())]
            if list(self.taskmanager_choice.options) != live:
                chosen = self.taskmanager_choice.value
                self.taskmanager_choice.options = live
                self.taskmanager_choice.value = chosen if chosen in live else (live[0] if live else None)
            for name in ("checkpoint", "savepoint", "stop", "cancel"):
                self.buttons[name].disabled = model.ended
        if "results" in self.parts:
            found = results_frame(self.cluster, model.job_id)
            if found is None:
                self._set(self._html["results"], f'{html.STYLE}<div class="sk sk-results sk-muted" data-total="0">'
                                                 f'No collect or pandas sink in this job.</div>')
            else:
                self._set(self._html["results"], html.results_html(*found))
        self.refreshes += 1

    @staticmethod
    def _set(widget: Any, value: str) -> None:
        if widget.value != value:
            widget.value = value

    @property
    def done(self) -> bool:
        """Closed, or the job ended (after its final picture)."""
        return self._closed or self._ended

    def fallback_text(self) -> str:
        """The last picture as text."""
        from streamkernel.jupyter.widgets.text import job_text

        return job_text(self.model) if self.model is not None else f"JobDashboard({self.job_id})"

    def fallback_html(self) -> str:
        """The last picture of every part."""
        parts = [self._html[p].value for p in self.parts if p in self._html and p != "results"]
        if "checkpoints" in self.parts:
            parts.append(self._checkpoints_html.value)
        if "results" in self.parts:
            parts.append(self._html["results"].value)
        return "".join(parts)


def _retain(path: str, configuration: Any, job_id: str, checkpoint_id: int) -> str:
    """A copy of checkpoint ``path`` in the savepoint directory (``execution.checkpointing.savepoint-dir``,
    else ``./savepoints``), which outlives the job's cancellation; returns the copy's path."""
    import os
    import shutil

    from streamkernel.common.options import CheckpointingOptions
    from streamkernel.runtime.checkpoint.storage import DEFAULT_SAVEPOINT_DIR

    base = CheckpointingOptions.SAVEPOINT_DIRECTORY.get(configuration) or DEFAULT_SAVEPOINT_DIR
    target = os.path.join(base, f"retained-{job_id[:8]}-chk-{checkpoint_id}")
    if not os.path.exists(target):
        shutil.copytree(path, target)
    return os.path.abspath(target)
