"""HTML for the cockpit's models: what the widgets show and what a static notebook keeps.

Self-contained HTML (inline styles in one ``<style>`` block per fragment, no JavaScript),
so the same fragment works in a live widget, in JupyterLab's output area after the kernel
is gone, and in nbconvert's HTML. Elements carry ``sk-*`` classes (and ``data-*``
attributes) that tests and the browser test select by: ``sk-taskmanager``, ``sk-slot``
(``sk-slot-occupied`` / ``sk-slot-free``), ``sk-chip``, ``sk-vertex-row``,
``sk-subtask-row``, ``sk-checkpoint-row``, ``sk-results``.
"""

from __future__ import annotations

import datetime
import html
from typing import Any, Optional, Sequence

from streamkernel.jupyter.widgets.models import BACKPRESSURE_COLOURS, ClusterModel, JobModel

__all__ = ["STYLE", "cluster_html", "job_header_html", "vertices_html", "subtasks_html", "checkpoints_html",
           "results_html", "sparkline_svg", "format_rate", "format_bytes", "format_watermark"]

STYLE = """<style>
.sk {font-family: var(--jp-ui-font-family, sans-serif); font-size: 12px; color: var(--jp-ui-font-color1, #222);}
.sk table {border-collapse: collapse; margin: 4px 0;}
.sk th, .sk td {padding: 2px 8px; border-bottom: 1px solid #e0e0e0; text-align: right; white-space: nowrap;}
.sk th {background: #f5f5f5; font-weight: 600;}
.sk td.sk-l, .sk th.sk-l {text-align: left;}
.sk-cards {display: flex; flex-wrap: wrap; gap: 8px;}
.sk-taskmanager {border: 1px solid #90a4ae; border-radius: 6px; padding: 6px; min-width: 220px; background: #fafafa;}
.sk-tm-title {font-weight: 700;}
.sk-tm-meta {color: #607d8b; margin-bottom: 4px;}
.sk-slots {display: flex; gap: 6px; flex-wrap: wrap;}
.sk-slot {border: 1px solid #b0bec5; border-radius: 4px; padding: 4px; min-width: 120px; min-height: 40px; background: #fff;}
.sk-slot-free {border-style: dashed; color: #9e9e9e;}
.sk-slot-name {font-size: 11px; color: #78909c;}
.sk-chip {display: block; border-radius: 3px; padding: 1px 4px; margin: 2px 0; color: #212121;}
.sk-level {display: inline-block; border-radius: 3px; padding: 0 4px; font-weight: 600;}
.sk-status {font-weight: 700;}
.sk-muted {color: #78909c;}
</style>"""


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def format_rate(per_second: float) -> str:
    """``1.2k/s`` style.

        >>> format_rate(0), format_rate(12.34), format_rate(1234), format_rate(2_500_000)
        ('0/s', '12/s', '1.2k/s', '2.5M/s')
    """
    if per_second >= 1e6:
        return f"{per_second / 1e6:.1f}M/s"
    if per_second >= 1e3:
        return f"{per_second / 1e3:.1f}k/s"
    return f"{per_second:.0f}/s"


def format_bytes(size: Optional[int]) -> str:
    """``1.7 MiB`` style; ``-`` for None.

        >>> format_bytes(None), format_bytes(512), format_bytes(1536), format_bytes(3 * 2**20)
        ('-', '512 B', '1.5 KiB', '3.0 MiB')
    """
    if size is None:
        return "-"
    if size < 1024:
        return f"{size} B"
    if size < 2 ** 20:
        return f"{size / 1024:.1f} KiB"
    return f"{size / 2 ** 20:.1f} MiB"


def format_watermark(watermark: Optional[int]) -> str:
    """A watermark in ms: ``-`` before the first one, else the number (event-time ms)."""
    return "-" if watermark is None else str(watermark)


def _percent(share: float) -> str:
    return f"{share * 100:.0f}%"


def sparkline_svg(values: Sequence[float], width: int = 90, height: int = 18) -> str:
    """A tiny line chart of ``values`` (empty: a flat line), scaled to its own maximum."""
    points = list(values)[-60:]
    if len(points) < 2:
        return f'<svg class="sk-spark" width="{width}" height="{height}"></svg>'
    top = max(points) or 1.0
    step = width / (len(points) - 1)
    coords = " ".join(f"{i * step:.1f},{height - 1 - (v / top) * (height - 2):.1f}" for i, v in enumerate(points))
    return (f'<svg class="sk-spark" width="{width}" height="{height}"><polyline fill="none" stroke="#1e88e5" '
            f'stroke-width="1.2" points="{coords}"/></svg>')


# ---------------------------------------------------------------------------- cluster
def cluster_html(model: ClusterModel) -> str:
    """The TaskManager cards with their slot grids."""
    if not model.running:
        return f'{STYLE}<div class="sk"><span class="sk-muted">The cluster is stopped.</span></div>'
    cards = []
    for card in model.cards:
        slots = []
        for slot in card.slots:
            if slot.free:
                slots.append(f'<div class="sk-slot sk-slot-free" data-slot="{_e(slot.name)}">'
                             f'<div class="sk-slot-name">{_e(slot.name)}</div>free</div>')
                continue
            chips = "".join(f'<span class="sk-chip" style="background:{chip.colour}" data-job="{_e(chip.job_id)}" '
                            f'title="{_e(chip.job_name)}: {_e(chip.label)}">{_e(chip.label)}</span>'
                            for chip in slot.chips) or '<span class="sk-muted">allocated</span>'
            slots.append(f'<div class="sk-slot sk-slot-occupied" data-slot="{_e(slot.name)}" data-job="{_e(slot.job_id)}">'
                         f'<div class="sk-slot-name">{_e(slot.name)} &middot; {_e(slot.job_name)}</div>{chips}</div>')
        age = "-" if card.heartbeat_age_s is None else f"{card.heartbeat_age_s:.1f} s ago"
        pid = "" if card.pid is None else f" &middot; pid {_e(card.pid)}"
        memory = "" if card.memory is None else f'<div class="sk-tm-meta sk-tm-memory">{_e(card.memory.describe())}</div>'
        cards.append(f'<div class="sk-taskmanager" data-taskmanager="{_e(card.id)}">'
                     f'<div class="sk-tm-title">{_e(card.name)} &middot; {_e(card.id)}</div>'
                     f'<div class="sk-tm-meta">{_e(card.backend)} &middot; {_e(card.host)}{pid} &middot; '
                     f'heartbeat {age}</div>{memory}<div class="sk-slots">{"".join(slots)}</div></div>')
    pending = "".join(f" &middot; job {_e(job[:8])} waits for {n} slot(s)" for job, n in model.pending_requests)
    summary = (f'<div class="sk-muted">{_e(model.backend)} backend &middot; {len(model.cards)} TaskManager(s) &middot; '
               f'{model.occupied_slots} of {model.total_slots} slots in use{pending}</div>')
    return f'{STYLE}<div class="sk">{summary}<div class="sk-cards">{"".join(cards)}</div></div>'


# -------------------------------------------------------------------------------- job
_STATUS_COLOURS = {"RUNNING": "#2e7d32", "FINISHED": "#1565c0", "FAILED": "#c62828", "CANCELED": "#6d4c41",
                   "RESTARTING": "#ef6c00", "FAILING": "#c62828", "CANCELLING": "#6d4c41"}


def job_header_html(model: JobModel) -> str:
    """Name, id, status, duration, restarts and the failure, if any."""
    colour = _STATUS_COLOURS.get(model.status, "#455a64")
    failure = f'<div style="color:#c62828">{_e(model.failure)}</div>' if model.failure else ""
    restored = f' &middot; restored from {_e(model.latest_restored)}' if model.latest_restored else ""
    return (f'{STYLE}<div class="sk"><b>{_e(model.name)}</b> <span class="sk-muted">{_e(model.job_id)}</span> '
            f'<span class="sk-status" style="color:{colour}" data-status="{_e(model.status)}">{_e(model.status)}</span> '
            f'&middot; {model.duration_ms / 1000:.1f} s &middot; {model.num_restarts} restart(s){restored}{failure}</div>')


def vertices_html(model: JobModel) -> str:
    """One row per job vertex: parallelism, rates, busy and backpressure."""
    rows = []
    for v in model.vertices:
        level = v.backpressure_level
        states = ", ".join(f"{n} {s}" for s, n in v.states)
        rows.append(f'<tr class="sk-vertex-row" data-vertex="{v.id}" data-backpressure="{level}">'
                    f'<td class="sk-l"><span class="sk-chip" style="background:{v.colour}">{_e(v.name)}</span></td>'
                    f'<td>{v.parallelism}</td><td class="sk-l">{_e(states)}</td>'
                    f'<td>{format_rate(v.records_in_per_s)}</td><td>{format_rate(v.records_out_per_s)}</td>'
                    f'<td>{_percent(v.busy)}</td><td><span class="sk-level" style="background:{BACKPRESSURE_COLOURS[level]}">'
                    f'{level}</span> {_percent(v.backpressured)}</td></tr>')
    return (f'{STYLE}<div class="sk"><table><tr><th class="sk-l">vertex</th><th>p</th><th class="sk-l">subtasks</th>'
            f'<th>in</th><th>out</th><th>busy (max)</th><th>backpressure (max)</th></tr>{"".join(rows)}</table></div>')


def subtasks_html(model: JobModel) -> str:
    """One row per subtask with a sparkline of its rate over the last minute."""
    rows = []
    for s in model.subtasks:
        latency = "-" if s.latency_ms is None else f"{s.latency_ms:.1f} ms"
        rows.append(f'<tr class="sk-subtask-row" data-vertex="{s.vertex_id}" data-subtask="{s.subtask}">'
                    f'<td class="sk-l">{_e(s.vertex)} ({s.subtask})</td><td>{sparkline_svg(s.rate_series)}</td>'
                    f'<td class="sk-l">{_e(s.state)}</td>'
                    f'<td class="sk-l">{_e(s.slot or "-")}</td><td>{s.records_in:,}</td><td>{s.records_out:,}</td>'
                    f'<td>{format_rate(s.rates.records_in_per_s)}</td><td>{format_rate(s.rates.records_out_per_s)}</td>'
                    f'<td>{_percent(s.rates.busy)}</td><td>{_percent(s.rates.backpressured)}</td>'
                    f'<td>{format_watermark(s.input_watermark)}</td><td>{latency}</td></tr>')
    return (f'{STYLE}<div class="sk"><table><tr><th class="sk-l">subtask</th><th>last minute</th><th class="sk-l">state</th>'
            f'<th class="sk-l">slot</th><th>records in</th><th>records out</th><th>in</th><th>out</th><th>busy</th>'
            f'<th>backpressured</th><th>watermark</th><th>latency</th></tr>{"".join(rows)}</table></div>')


def _time(ms: Optional[int]) -> str:
    if ms is None:
        return "-"
    return datetime.datetime.fromtimestamp(ms / 1000).strftime("%H:%M:%S")


def checkpoints_html(model: JobModel) -> str:
    """The checkpoint history, newest first, and the counts."""
    counts = " &middot; ".join(f"{n} {_e(k)}" for k, n in model.checkpoint_counts if n)
    rows = "".join(
        f'<tr class="sk-checkpoint-row" data-checkpoint="{c.id}" data-status="{_e(c.status)}">'
        f'<td>{c.id}</td><td class="sk-l">{_e(c.type)}</td><td class="sk-l">{_e(c.status)}</td><td>{_time(c.trigger_timestamp)}</td>'
        f'<td>{"-" if c.duration_ms is None else f"{c.duration_ms} ms"}</td><td>{format_bytes(c.state_size)}</td>'
        f'<td>{"yes" if c.unaligned else "no"}</td><td>{format_bytes(c.persisted_data)}</td>'
        f'<td>{_e(c.acknowledged)}</td><td class="sk-l">{_e(c.failure or c.path or "")}</td></tr>'
        for c in model.checkpoints)
    empty = '' if rows else '<div class="sk-muted">No checkpoint yet.</div>'
    return (f'{STYLE}<div class="sk"><div class="sk-muted">{counts}</div>{empty}<table><tr><th>id</th><th class="sk-l">type</th>'
            f'<th class="sk-l">status</th><th>triggered</th><th>duration</th><th>size</th><th>unaligned</th>'
            f'<th>persisted data</th><th>acks</th>'
            f'<th class="sk-l">path / failure</th></tr>{rows}</table></div>')


def results_html(frame: Any, total: int) -> str:
    """The last records of a collect sink (a pandas DataFrame) and how many arrived."""
    table = frame.to_html(index=False, border=0, max_rows=50) if len(frame) else '<div class="sk-muted">No record yet.</div>'
    return (f'{STYLE}<div class="sk sk-results" data-total="{total}">'
            f'<div class="sk-muted">{total:,} records; the last {len(frame)}:</div>{table}</div>')
