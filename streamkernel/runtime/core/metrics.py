"""Metrics: counters kept per subtask and operator, readable at any moment without locks.

Tasks only increment plain integer attributes (one add per batch on the hot path); a
reader (the JobManager's snapshot, a widget) copies them. Under the GIL a read of an int
attribute is atomic, so a snapshot is a consistent-enough picture without stopping the job.
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
    """Records in/out of one operator of a chain, plus the user's metric group."""

    __slots__ = ("name", "records_in", "records_out", "user")

    def __init__(self, name: str) -> None:
        self.name = name
        self.records_in = 0
        self.records_out = 0
        self.user = MetricGroup((name,), logical_scope=())  # below the operator's own scope


class TaskMetrics:
    """One subtask's metrics: records, bytes, busy/idle/backpressured time, watermarks, latency."""

    def __init__(self, task_name: str, subtask_index: int) -> None:
        self.task_name = task_name
        self.subtask_index = subtask_index
        self.records_in = 0
        self.records_out = 0
        # the channels whose bytes this task counts (Flink's numBytesIn / numBytesOut): what
        # crossed a process boundary serialized; an exchange inside one process moves objects
        self.input_channels: Sequence[Any] = ()
        self.output_channels: Sequence[Any] = ()
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

    def operator(self, name: str) -> OperatorMetrics:
        """The metrics of the chained operator ``name`` (created on first use)."""
        metrics = self.operators.get(name)
        if metrics is None:
            metrics = self.operators[name] = OperatorMetrics(name)
        return metrics

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
        return {
            "task": self.task_name, "subtask": self.subtask_index,
            "records_in": self.records_in, "records_out": self.records_out,
            "bytes_in": sum(getattr(c, "bytes_received", 0) for c in self.input_channels),
            "bytes_out": sum(getattr(c, "bytes_sent", 0) for c in self.output_channels),
            "busy_ns": busy_ns + working, "idle_ns": self.idle_ns,
            "backpressured_ns": backpressured_ns + waiting,
            "input_watermark": self.input_watermark, "output_watermark": self.output_watermark,
            "latency_ms": list(self.latency_ms), "uptime_ns": now - self.started_ns,
            "operators": {n: {"records_in": m.records_in, "records_out": m.records_out}
                          for n, m in self.operators.items()},
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
