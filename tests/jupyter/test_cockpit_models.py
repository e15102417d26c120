"""The cockpit's models and renderers, from hand-made snapshots: what a person would see."""

from __future__ import annotations

import re

from streamkernel.jupyter.widgets import html, text
from streamkernel.jupyter.widgets.history import MetricsHistory, Sample
from streamkernel.runtime.core.metrics import backpressure_level
from streamkernel.jupyter.widgets.models import PALETTE, cluster_model, find_job, job_model

JOB = "a" * 32


def _metrics(records_in: int, records_out: int, busy_ms: int, bp_ms: int, uptime_ms: int, **extra) -> dict:
    return {"records_in": records_in, "records_out": records_out, "busy_ns": busy_ms * 1_000_000,
            "idle_ns": (uptime_ms - busy_ms - bp_ms) * 1_000_000, "backpressured_ns": bp_ms * 1_000_000,
            "uptime_ns": uptime_ms * 1_000_000, "input_watermark": extra.get("watermark", -(2 ** 63)),
            "latency_ms": extra.get("latency", [])}


def snapshot(time_ms: int, source_out: tuple[int, int], sink_in: tuple[int, int], uptime_ms: int,
             source_bp_ms: int = 0, status: str = "RUNNING") -> dict:
    """Two TaskManagers of 2 slots; a job with Source (p=2) and Map -> Sink (p=2) on TM1."""
    def sub(vertex: int, index: int, name: str, metrics: dict) -> dict:
        return {"vertex_id": vertex, "subtask": index, "name": f"{name} ({index + 1}/2)", "state": "RUNNING",
                "attempt": 0, "slot": f"TM1/slot{index + 1}", "taskmanager": "taskmanager-1", "metrics": metrics}

    return {
        "running": True, "backend": "local", "time": time_ms,
        "taskmanagers": [
            {"id": "taskmanager-2", "index": 1, "placement": {"backend": "local", "host": "vm", "pid": 7},
             "heartbeat_age_ms": 300,
             "slots": [{"slot": "TM2/slot1", "index": 0, "job_id": None, "job_name": None, "tasks": []},
                       {"slot": "TM2/slot2", "index": 1, "job_id": None, "job_name": None, "tasks": []}]},
            {"id": "taskmanager-1", "index": 0, "placement": {"backend": "local", "host": "vm", "pid": 7},
             "heartbeat_age_ms": 100,
             "slots": [{"slot": f"TM1/slot{i + 1}", "index": i, "job_id": JOB, "job_name": "demo",
                        "tasks": [f"Map -> Sink: out ({i + 1}/2)", f"Source: gen ({i + 1}/2)"]} for i in range(2)]},
        ],
        "slots": {"total": 4, "free": 2}, "pending_slot_requests": {"b" * 32: 3},
        "jobs": [{"job_id": JOB, "name": "demo", "status": status, "start_time": 1, "duration_ms": 2500,
                  "num_restarts": 1, "failure": None,
                  "vertices": [
                      {"id": 1, "name": "Source: gen", "parallelism": 2, "states": {"RUNNING": 2},
                       "subtasks": [sub(1, i, "Source: gen", _metrics(source_out[i], source_out[i], 100, source_bp_ms,
                                                                      uptime_ms)) for i in range(2)]},
                      {"id": 2, "name": "Map -> Sink: out", "parallelism": 2, "states": {"RUNNING": 2},
                       "subtasks": [sub(2, i, "Map -> Sink: out", _metrics(sink_in[i], 0, 400, 0, uptime_ms,
                                                                           watermark=1500, latency=[2.0, 4.0, 9.0]))
                                    for i in range(2)]}],
                  "checkpoints": {"counts": {"completed": 1, "failed": 1, "in_progress": 0},
                                  "history": [{"id": 2, "type": "savepoint", "status": "FAILED", "trigger_timestamp": 5,
                                               "duration_ms": None, "state_size": None, "acknowledged": "1/4",
                                               "path": None, "failure": "declined by Map (1/2)"},
                                              {"id": 1, "type": "checkpoint", "status": "COMPLETED",
                                               "trigger_timestamp": 3, "duration_ms": 12, "state_size": 3 * 2 ** 20,
                                               "unaligned": True, "persisted_data": 5 * 2 ** 10,
                                               "acknowledged": "4/4", "path": "/tmp/chk-1", "failure": None}],
                                  "latest_restored": {"id": 7, "type": "checkpoint", "path": "/tmp/chk-7"}}}],
    }


def test_the_cluster_model_has_a_card_per_taskmanager_in_order_with_its_slots_and_subtasks() -> None:
    model = cluster_model(snapshot(1000, (0, 0), (0, 0), 1000))
    assert [c.name for c in model.cards] == ["TM1", "TM2"] and model.cards[0].heartbeat_age_s == 0.1
    first = model.cards[0].slots[0]
    assert first.name == "TM1/slot1" and first.job_name == "demo"
    assert [c.label for c in first.chips] == ["Source: gen (1/2)", "Map -> Sink: out (1/2)"]  # vertex order
    assert [c.colour for c in first.chips] == [PALETTE[0], PALETTE[1]]
    assert model.cards[0].slots[1].chips[0].colour == PALETTE[0]  # one colour per vertex, across slots
    assert all(s.free for s in model.cards[1].slots)
    assert (model.total_slots, model.occupied_slots, model.pending_requests) == (4, 2, (("b" * 32, 3),))


def test_rates_and_shares_come_from_the_newest_interval_and_a_restart_starts_a_new_series() -> None:
    history = MetricsHistory(window_s=60)
    history.add_snapshot(snapshot(1000, (100, 100), (50, 50), 1000))
    history.add_snapshot(snapshot(1500, (600, 300), (250, 250), 1500, source_bp_ms=300))
    model = job_model(find_job(snapshot(1500, (600, 300), (250, 250), 1500), JOB), history)
    source, sink = model.vertices
    assert source.records_out_per_s == (500 + 200) / 0.5
    assert sink.records_in_per_s == 400 / 0.5 and sink.records_out_per_s == 0
    assert source.backpressured == 0.6 and source.backpressure_level == "HIGH"  # 300 of 500 ms: 60%
    assert sink.backpressure_level == "OK"
    rows = {(r.vertex, r.subtask): r for r in model.subtasks}
    assert rows[("Map -> Sink: out", 1)].rate_series == (400.0,)  # a sink: its records in per second
    assert rows[("Map -> Sink: out", 1)].latency_ms == 4.0 and rows[("Map -> Sink: out", 1)].input_watermark == 1500
    assert rows[("Source: gen", 1)].input_watermark is None  # no watermark yet
    key = (JOB, 1, 0)
    history.add(key, Sample(2000, 1, 10, 10, 0, 0, 0, 100_000_000))  # attempt 1: counters from zero
    assert history.series(key) == [] and history.rates(key).records_out_per_s == 0


def test_backpressure_levels_follow_flinks_thresholds() -> None:
    assert [backpressure_level(r) for r in (0.0, 0.1, 0.11, 0.5, 0.51, 1.0)] == ["OK", "OK", "LOW", "LOW", "HIGH", "HIGH"]


def test_the_job_model_carries_the_checkpoint_history_newest_first() -> None:
    model = job_model(find_job(snapshot(1000, (0, 0), (0, 0), 1000), "demo"))
    assert [(c.id, c.type, c.status) for c in model.checkpoints] == [(2, "savepoint", "FAILED"), (1, "checkpoint", "COMPLETED")]
    assert dict(model.checkpoint_counts)["completed"] == 1 and model.latest_restored == "checkpoint 7 (/tmp/chk-7)"
    assert find_job(snapshot(0, (0, 0), (0, 0), 1), "aaaa")["name"] == "demo" and find_job({"jobs": []}) is None


def test_html_shows_cards_slots_chips_rows_and_escapes_names() -> None:
    snap = snapshot(1000, (0, 0), (0, 0), 1000)
    snap["jobs"][0]["name"] = "<b>demo</b>"
    cluster = html.cluster_html(cluster_model(snap))
    assert cluster.count('class="sk-taskmanager"') == 2
    assert cluster.count("sk-slot sk-slot-occupied") == 2 and cluster.count("sk-slot sk-slot-free") == 2
    assert cluster.count('class="sk-chip"') == 4 and "heartbeat 0.1 s ago" in cluster
    history = MetricsHistory()
    history.add_snapshot(snapshot(1000, (100, 100), (50, 50), 1000))
    history.add_snapshot(snapshot(1500, (600, 300), (250, 250), 1500, source_bp_ms=300))
    history.add_snapshot(snapshot(2000, (700, 400), (500, 500), 2000, source_bp_ms=600))
    model = job_model(find_job(snap, JOB), history)
    assert "&lt;b&gt;demo&lt;/b&gt;" in html.job_header_html(model) and "<b>demo</b>" not in html.job_header_html(model)
    vertices = html.vertices_html(model)
    assert re.findall(r'data-backpressure="(\w+)"', vertices) == ["HIGH", "OK"] and "1.0k/s" in vertices
    assert html.subtasks_html(model).count('class="sk-subtask-row"') == 4
    assert html.subtasks_html(model).count("<polyline") == 4
    checkpoints = html.checkpoints_html(model)
    assert re.findall(r'data-checkpoint="(\d+)" data-status="(\w+)"', checkpoints) == [("2", "FAILED"), ("1", "COMPLETED")]
    assert "3.0 MiB" in checkpoints and "declined by Map (1/2)" in checkpoints
    assert "<td>yes</td><td>5.0 KiB</td>" in checkpoints and "<th>persisted data</th>" in checkpoints  # unaligned


def test_text_shows_the_same_for_a_terminal() -> None:
    out = text.cluster_text(cluster_model(snapshot(1000, (0, 0), (0, 0), 1000)))
    assert out.splitlines()[:3] == ["local backend, 2 TaskManager(s), 2 of 4 slots in use",
                                    "job bbbbbbbb waits for 3 slot(s)",
                                    "TM1 taskmanager-1 (local, vm, pid 7, heartbeat 0.1 s ago)"]
    assert "  TM1/slot1  demo: Source: gen (1/2), Map -> Sink: out (1/2)" in out and "  TM2/slot2  free" in out
    job = text.job_text(job_model(find_job(snapshot(1000, (0, 0), (0, 0), 1000), JOB)))
    assert job.startswith(f"demo ({JOB}) RUNNING, 2.5 s, 1 restart(s)")
    assert "Map -> Sink: out (2)" in job and "/tmp/chk-1" in job
    assert text.cluster_text(cluster_model({"running": False})) == "The cluster is stopped."


def test_sparklines_scale_to_their_maximum() -> None:
    svg = html.sparkline_svg([0.0, 5.0, 10.0], width=20, height=12)
    assert 'points="0.0,11.0 10.0,6.0 20.0,1.0"' in svg
    assert "<polyline" not in html.sparkline_svg([3.0])
