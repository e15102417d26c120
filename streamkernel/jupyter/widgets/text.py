"""Plain text for the cockpit's models: what a terminal (IPython without a notebook) shows.

Tables are pandas DataFrames printed with ``to_string``; the cluster is one block per
TaskManager with a line per slot.
"""

from __future__ import annotations

from typing import Any

from streamkernel.jupyter.widgets.html import format_bytes, format_rate, format_watermark
from streamkernel.jupyter.widgets.models import ClusterModel, JobModel

__all__ = ["cluster_text", "job_text", "vertices_frame", "subtasks_frame", "checkpoints_frame"]


def cluster_text(model: ClusterModel) -> str:
    """One block per TaskManager, one line per slot with the subtasks it holds."""
    if not model.running:
        return "The cluster is stopped."
    lines = [f"{model.backend} backend, {len(model.cards)} TaskManager(s), "
             f"{model.occupied_slots} of {model.total_slots} slots in use"]
    for job, wanted in model.pending_requests:
        lines.append(f"job {job[:8]} waits for {wanted} slot(s)")
    for card in model.cards:
        age = "-" if card.heartbeat_age_s is None else f"{card.heartbeat_age_s:.1f} s ago"
        pid = "" if card.pid is None else f", pid {card.pid}"
        lines.append(f"{card.name} {card.id} ({card.backend}, {card.host}{pid}, heartbeat {age})")
        if card.memory is not None:
            lines.append(f"  memory: {card.memory.describe()}")
        for slot in card.slots:
            held = "free" if slot.free else f"{slot.job_name}: " + (", ".join(c.label for c in slot.chips) or "allocated")
            lines.append(f"  {slot.name}  {held}")
    return "\n".join(lines)


def _frame(rows: list[dict]) -> Any:
    import pandas as pd

    return pd.DataFrame(rows)


def vertices_frame(model: JobModel) -> Any:
    """One row per job vertex."""
    return _frame([{"vertex": v.name, "parallelism": v.parallelism, "in": format_rate(v.records_in_per_s),
                    "out": format_rate(v.records_out_per_s), "busy": f"{v.busy * 100:.0f}%",
                    "backpressure": f"{v.backpressure_level} {v.backpressured * 100:.0f}%"} for v in model.vertices])


def subtasks_frame(model: JobModel) -> Any:
    """One row per subtask."""
    return _frame([{"subtask": f"{s.vertex} ({s.subtask})", "state": s.state, "slot": s.slot,
                    "records_in": s.records_in, "records_out": s.records_out,
                    "in": format_rate(s.rates.records_in_per_s), "out": format_rate(s.rates.records_out_per_s),
                    "busy": f"{s.rates.busy * 100:.0f}%", "backpressured": f"{s.rates.backpressured * 100:.0f}%",
                    "watermark": format_watermark(s.input_watermark),
                    "latency_ms": "-" if s.latency_ms is None else round(s.latency_ms, 1)} for s in model.subtasks])


def checkpoints_frame(model: JobModel) -> Any:
    """One row per checkpoint or savepoint, newest first."""
    return _frame([{"id": c.id, "type": c.type, "status": c.status, "duration_ms": c.duration_ms,
                    "size": format_bytes(c.state_size), "unaligned": c.unaligned,
                    "persisted": format_bytes(c.persisted_data), "acks": c.acknowledged, "path": c.path or "",
                    "failure": c.failure or ""} for c in model.checkpoints])


def job_text(model: JobModel) -> str:
    """Header, vertices, subtasks and checkpoints as text."""
    parts = [f"{model.name} ({model.job_id}) {model.status}, {model.duration_ms / 1000:.1f} s, "
             f"{model.num_restarts} restart(s)"]
    if model.failure:
        parts.append(model.failure)
    if model.vertices:
        parts.append(vertices_frame(model).to_string(index=False))
    if model.subtasks:
        parts.append(subtasks_frame(model).to_string(index=False))
    if model.checkpoints:
        parts.append(checkpoints_frame(model).to_string(index=False))
    return "\n\n".join(parts)
