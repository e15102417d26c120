"""Metrics: counters kept per subtask and operator, readable at any moment without locks.

Tasks only increment plain integer attributes (one add per batch on the hot path); a
reader (the JobManager's snapshot, a widget) copies them. Under the GIL a read of an int
attribute is atomic, so a snapshot is a consistent-enough picture without stopping the job.

What a snapshot holds is raw: counts, accumulated times, gauges read at that moment (queue
lengths, credits in use, watermarks) and a few recent samples (the mailbox's latencies, the
backpressure periods of the last second). Flink's metrics are computed from snapshots when
someone asks (:mod:`.task_metric_values`: rates, ratios, histogram statistics), never by the task.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any, Callable, Optional, Sequence

from streamkernel.common.job_status import select_jobs
from streamkernel.common.watermark_strategy import MIN_WATERMARK

__all__ = ["Counter", "MetricGroup", "OperatorMetrics", "TaskMetrics", "backpressure_level"]


class Counter:
    """A user or system counter: ``inc(n)``, ``dec(n)``, ``get_count()``."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0

    def inc(self, n: int = 1) -> None:
        """Add ``n``."""
        self.count += n

    def dec(self, n: int = 1) -> None:
        """Subtract ``n``."""
        self.count -= n

    def get_count(self) -> int:
        """The current count."""
        return self.count


class MetricGroup:
    """PyFlink's metric group for user functions: ``counter``, ``gauge``, ``meter``, ``distribution``.

    ``scope`` names the group and its parents (a key/value group as ``key.value``); for reporters
    it also keeps Flink's ``logical_scope`` (a key/value group adds only its key) and its scope
    ``variables`` (a key/value group adds ``key: value``), as Flink's GenericKeyMetricGroup does.
    """

    def __init__(self, scope: tuple[str, ...] = (), *, logical_scope: Optional[tuple[str, ...]] = None,
                 variables: Optional[dict[str, str]] = None) -> None:
        self.scope = scope
        self.logical_scope = scope if logical_scope is None else logical_scope
        self.variables: dict[str, str] = dict(variables or {})
        self.counters: dict[str, Counter] = {}
        self.gauges: dict[str, Callable[[], Any]] = {}
        self.children: dict[str, "MetricGroup"] = {}

    def add_group(self, name: str, extra: Optional[str] = None) -> "MetricGroup":
        """A sub-group (``extra`` makes it a key/value group, as in PyFlink)."""
        key = name if extra is None else f"{name}.{extra}"
        child = self.children.get(key)
        if child is None:
            variables = self.variables if extra is None else {**self.variables, name: str(extra)}
            child = self.children[key] = MetricGroup(self.scope + (key,), logical_scope=self.logical_scope + (name,),
                                                     variables=variables)
        return child

    def counter(self, name: str) -> Counter:
        """The counter ``name`` (created on first use)."""
        return self.counters.setdefault(name, Counter())

    def gauge(self, name: str, obj: Callable[[], Any]) -> None:
        """Register a gauge read by calling ``obj()``."""
        self.gauges[name] = obj

    def meter(self, name: str, time_span_in_seconds: int = 60) -> Counter:
        """A meter: counted events (rates are derived from snapshots)."""
        return self.counter(name)

    def distribution(self, name: str) -> Counter:
        """A distribution, kept as a counter of updates here."""
        return self.counter(name)

    def get_metric_group(self) -> "MetricGroup":
        """PyFlink compatibility: this group."""
        return self


class OperatorMetrics:
    """Records in/out of one operator of a chain, the watermarks that passed it (recorded by
    the chain's links), plus the user's metric group. A source operator also keeps when it
    last emitted records (``last_emit_ms``, wall clock) and their newest event time
    (``last_event_time``), once per batch."""

    __slots__ = ("name", "records_in", "records_out", "user", "input_watermark", "output_watermark",
                 "last_emit_ms", "last_event_time", "kind")

    def __init__(self, name: str) -> None:
        self.name = name
        self.records_in = 0
        self.records_out = 0
        self.user = MetricGroup((name,), logical_scope=())  # below the operator's own scope
        self.input_watermark = MIN_WATERMARK
        self.output_watermark = MIN_WATERMARK
        self.last_emit_ms = 0  # 0: never emitted
        self.last_event_time: Optional[int] = None
        self.kind = ""  # "source", "sink" or "" (set by the task that runs it)

    def snapshot(self) -> dict:
        """A copy of the figures (plain data)."""
        return {"records_in": self.records_in, "records_out": self.records_out,
                "input_watermark": self.input_watermark, "output_watermark": self.output_watermark,
                "last_emit_ms": self.last_emit_ms, "last_event_time": self.last_event_time, "kind": self.kind}


#: How long (ns) a finished backpressure period counts for ``maxHardBackPressureTimeMs`` (Flink:
#: the longest single period of its last sampling period, a second).
BACKPRESSURE_PERIOD_WINDOW_NS = 1_000_000_000


class TaskMetrics:
    """One subtask's metrics: records, bytes, buffers, busy/idle/backpressured time, watermarks,
    latency, its mailbox, timers and checkpoints' alignment.

    The task wires what it owns in once (its channels, writers, mailbox, timer services);
    its loops add to the counters per batch; :meth:`snapshot` reads everything."""

    def __init__(self, task_name: str, subtask_index: int) -> None:
        self.task_name = task_name
        self.subtask_index = subtask_index
        self.records_in = 0
        self.records_out = 0
        # the channels whose bytes this task counts (Flink's numBytesIn / numBytesOut): what
        # crossed a process boundary serialized; an exchange inside one process moves objects
        self.input_channels: Sequence[Any] = ()
        self.output_channels: Sequence[Any] = ()
        # an input channel's credits are its exclusive buffers plus a share of its gate's floating ones
        self.exclusive_buffers_per_channel = 2
        self.busy_ns = 0
        self.idle_ns = 0
        self.backpressured_ns = 0
        # perf_counter_ns() when the batch in progress started / the wait for credit in
        # progress began (0: none), so that a snapshot counts a long batch or wait at once
        self.busy_since = 0
        self.backpressured_since = 0
        self.backpressured_at_busy_start = 0  # backpressured_ns when the batch in progress started
        self.input_watermark = MIN_WATERMARK
        self.output_watermark = MIN_WATERMARK
        self.latency_ms: deque[float] = deque(maxlen=128)
        self.started_ns = time.perf_counter_ns()
        self.operators: dict[str, OperatorMetrics] = {}
        self.head_operator = ""  # the name of the chain's first operator (its input is the task's)
        # what the task owns and the snapshot reads (wired once by the task)
        self.writers: Sequence[Any] = ()  # RecordWriters: buffers_out
        self.mailbox: Any = None  # TaskMailbox: queue, processed, latency_ms
        self.timer_services: list[Any] = []  # InternalTimerServices: fired
        # (end perf_counter_ns, duration ns) of the recent waits for credit (RecordWriter adds them)
        self.backpressure_periods: deque[tuple[int, int]] = deque(maxlen=64)
        # restore() of the operators (Flink's initializationTime): since when, and how long it took
        self.initialization_started_ns = 0
        self.initialization_ns = 0
        # checkpoints: the alignment in progress (started, 0: none) and the last one's duration; the
        # delay from the checkpoint's trigger to its first barrier here (wall clock, ns)
        self.aligning_checkpoint = 0
        self.alignment_started_ns = 0
        self.checkpoint_alignment_ns = 0
        self.checkpoint_start_delay_ns = 0

    def operator(self, name: str) -> OperatorMetrics:
        """The metrics of the chained operator ``name`` (created on first use)."""
        metrics = self.operators.get(name)
        if metrics is None:
            metrics = self.operators[name] = OperatorMetrics(name)
        return metrics

    def barrier_arrived(self, checkpoint_id: int, trigger_timestamp_ms: int) -> None:
        """(Task thread) a barrier of ``checkpoint_id`` reached an input: the first one starts its
        alignment and measures the checkpoint's start delay."""
        if checkpoint_id == self.aligning_checkpoint:
            return
        self.aligning_checkpoint = checkpoint_id
        self.alignment_started_ns = time.perf_counter_ns()
        self.checkpoint_start_delay_ns = max(time.time_ns() - trigger_timestamp_ms * 1_000_000, 0)

    def checkpoint_started(self, checkpoint_id: int, trigger_timestamp_ms: int) -> None:
        """(Task thread) the task snapshots ``checkpoint_id`` now: its alignment (if any) ended; a
        source task, triggered by the JobManager, measures the start delay here."""
        if checkpoint_id == self.aligning_checkpoint and self.alignment_started_ns:
            self.checkpoint_alignment_ns = time.perf_counter_ns() - self.alignment_started_ns
        elif checkpoint_id != self.aligning_checkpoint:  # no barrier came in: a source
            self.checkpoint_alignment_ns = 0
            self.checkpoint_start_delay_ns = max(time.time_ns() - trigger_timestamp_ms * 1_000_000, 0)
        self.aligning_checkpoint = checkpoint_id
        self.alignment_started_ns = 0

    def _channel_figures(self, now: int) -> dict:
        """Buffers and bytes received per kind of channel, queues and the credits in use."""
        figures = {"buffers_in_local": 0, "buffers_in_remote": 0, "bytes_in_local": 0, "bytes_in_remote": 0,
                   "input_queue_length": 0, "input_queue_bytes": 0, "input_buffers_used": 0, "input_buffers_total": 0,
                   "input_exclusive_used": 0, "input_exclusive_total": 0, "input_floating_used": 0,
                   "input_floating_total": 0,
                   "output_queue_length": 0, "output_queue_bytes": 0, "output_buffers_used": 0,
                   "output_buffers_total": 0}
        for channel in self.input_channels:
            remote = "remote" if getattr(channel, "remote", False) else "local"
            buffers = int(getattr(channel, "buffers_received", 0))
            received = int(getattr(channel, "bytes_received", 0))
            figures[f"buffers_in_{remote}"] += buffers
            figures[f"bytes_in_{remote}"] += received
            queued = channel.queued() if hasattr(channel, "queued") else 0
            credits = int(getattr(channel, "available_credits", 0))
            figures["input_queue_length"] += queued
            if remote == "remote" and buffers:  # frames' bytes are known on average only once read
                figures["input_queue_bytes"] += queued * received // buffers
            granted = queued + max(credits, 0)
            exclusive = min(self.exclusive_buffers_per_channel, granted)  # filled first, as Flink's
            figures["input_buffers_used"] += queued
            figures["input_buffers_total"] += granted
            figures["input_exclusive_used"] += min(queued, exclusive)
            figures["input_exclusive_total"] += exclusive
            figures["input_floating_used"] += max(queued - exclusive, 0)
            figures["input_floating_total"] += granted - exclusive
        for channel in self.output_channels:
            queued = channel.queued() if hasattr(channel, "queued") else 0
            credits = int(getattr(channel, "available_credits", 0))
            figures["output_queue_length"] += queued
            sent = int(getattr(channel, "items_sent", 0))
            if sent:  # to another TaskManager: frames of known bytes, on average
                figures["output_queue_bytes"] += queued * int(getattr(channel, "bytes_sent", 0)) // sent
            # credits below 0: overdraft buffers (unaligned checkpoints) are in use beyond the pool
            figures["output_buffers_used"] += queued - min(credits, 0)
            figures["output_buffers_total"] += queued + max(credits, 0)
        return figures

    def snapshot(self) -> dict:
        """A copy of every figure, for the JobManager's published snapshots.

        Busy and backpressured time include the batch or the wait for credit in progress
        (a slow operator's batch can last seconds; its time shows before it ends), busy
        time without the backpressured part, as Flink's ``busyTimeMsPerSecond``."""
        # the counters first: a batch or wait that ends meanwhile is then counted once (later)
        busy_ns, backpressured_ns = self.busy_ns, self.backpressured_ns
        now = time.perf_counter_ns()
        busy_since, backpressured_since = self.busy_since, self.backpressured_since
        waiting = now - backpressured_since if backpressured_since else 0
        waited_in_batch = backpressured_ns - self.backpressured_at_busy_start
        working = max(now - busy_since - waiting - waited_in_batch, 0) if busy_since else 0
        recent = now - BACKPRESSURE_PERIOD_WINDOW_NS
        longest_wait = max([d for end, d in list(self.backpressure_periods) if end >= recent] + [waiting])
        mailbox = self.mailbox
        initializing = (now - self.initialization_started_ns
                        if self.initialization_started_ns and not self.initialization_ns else 0)
        return {
            "task": self.task_name, "subtask": self.subtask_index,
            "records_in": self.records_in, "records_out": self.records_out,
            "bytes_in": sum(getattr(c, "bytes_received", 0) for c in self.input_channels),
            "bytes_out": sum(getattr(c, "bytes_sent", 0) for c in self.output_channels),
            "buffers_out": sum(getattr(w, "buffers_out", 0) for w in self.writers),
            **self._channel_figures(now),
            "busy_ns": busy_ns + working, "idle_ns": self.idle_ns,
            "backpressured_ns": backpressured_ns + waiting,
            "back_pressured": bool(backpressured_since), "max_backpressure_ns": longest_wait,
            "fired_timers": sum(getattr(s, "fired", 0) for s in self.timer_services),
            "mails": mailbox.processed if mailbox is not None else 0,
            "mailbox_queue": len(mailbox.queue) if mailbox is not None else 0,
            "mailbox_latency_ms": list(mailbox.latency_ms) if mailbox is not None else [],
            "initialization_ns": self.initialization_ns or initializing,
            "checkpoint_alignment_ns": (now - self.alignment_started_ns if self.alignment_started_ns
                                        else self.checkpoint_alignment_ns),
            "checkpoint_start_delay_ns": self.checkpoint_start_delay_ns,
            "input_watermark": self.input_watermark, "output_watermark": self.output_watermark,
            "latency_ms": list(self.latency_ms), "uptime_ns": now - self.started_ns,
            "head_operator": self.head_operator, "input_channels": len(self.input_channels),
            "operators": {n: m.snapshot() for n, m in list(self.operators.items())},
        }


def backpressure_level(ratio: float) -> str:
    """Flink's levels for a backpressured time share: OK (<= 10%), LOW (<= 50%), HIGH (the
    Web UI's colours and the REST API's ``backpressureLevel``, lower case there).

        >>> backpressure_level(0.05), backpressure_level(0.3), backpressure_level(0.9)
        ('OK', 'LOW', 'HIGH')
    """
    if ratio <= 0.10:
        return "OK"
    return "LOW" if ratio <= 0.50 else "HIGH"


def _ratio(part_ns: int, whole_ns: int) -> float:
    return round(part_ns / whole_ns, 3) if whole_ns > 0 else 0.0


def metric_rows(cluster_snapshot: dict, job: Optional[str] = None) -> list[dict]:
    """One row per subtask of every job in a cluster snapshot (``MiniCluster.inspection.snapshot()``).

    Columns: job, vertex, subtask, state, records in/out, records in/out per second (over
    the subtask's run time), bytes out, busy / idle / backpressured ratios, input and output
    watermarks, and the mean end-to-end latency of the latency samples. ``job`` keeps the
    jobs it names (id, id prefix or name: :func:`~streamkernel.common.job_status.select_jobs`);
    raises UnknownJobError (a KeyError) naming it when it names none, InvalidProgramError
    when it is blank.
    """
    jobs = cluster_snapshot.get("jobs", [])
    if job is not None:
        jobs = select_jobs(job, jobs, lambda j: (j["job_id"], j["name"]))
        if not jobs:
            from streamkernel.runtime.dispatcher.dispatcher import UnknownJobError  # lazy: the JobManager

            known = ", ".join(f"{j['job_id']} ({j['name']})" for j in cluster_snapshot.get("jobs", [])) or "none"
            raise UnknownJobError(f"no job {job!r} in this cluster (by id, id prefix or name); jobs: {known}")
    rows = []
    for job_info in jobs:
        for vertex in job_info["vertices"]:
            for sub in vertex["subtasks"]:
                m = sub.get("metrics") or {}
                uptime = m.get("uptime_ns", 0)
                seconds = uptime / 1e9 if uptime else 0.0
                latency = m.get("latency_ms") or []
                rows.append({
                    "job": job_info["name"], "vertex": vertex["name"], "subtask": sub["subtask"] + 1,
                    "state": sub["state"],
                    "records_in": m.get("records_in", 0), "records_out": m.get("records_out", 0),
                    "in_per_s": round(m.get("records_in", 0) / seconds, 1) if seconds else 0.0,
                    "out_per_s": round(m.get("records_out", 0) / seconds, 1) if seconds else 0.0,
                    "bytes_out": m.get("bytes_out", 0),
                    "busy": _ratio(m.get("busy_ns", 0), uptime), "idle": _ratio(m.get("idle_ns", 0), uptime),
                    "backpressured": _ratio(m.get("backpressured_ns", 0), uptime),
                    "input_watermark": _watermark(m.get("input_watermark")),
                    "output_watermark": _watermark(m.get("output_watermark")),
                    "latency_ms": round(sum(latency) / len(latency), 2) if latency else None,
                })
    return rows


def _watermark(value: Optional[int]) -> Optional[int]:
    """None for 'no watermark yet' (Flink shows Long.MIN_VALUE as 'No Watermark')."""
    if value is None or value == MIN_WATERMARK:
        return None
    return value
