"""A subtask's metrics by Flink's names, computed from one :class:`~.metrics.TaskMetrics` snapshot.

What Flink's task and operator metric groups register (docs/ops/metrics: IO, Network / Default
shuffle service, Checkpointing, mailbox, FLIP-33 source and sink metrics), by the ids Flink's
REST API lists them under: task metrics by name (``numRecordsIn``,
``Shuffle.Netty.Input.Buffers.inPoolUsage``), operator metrics under the operator's
metric-group name (``count_per_key.numRecordsOut``: :func:`metric_group_name`). Shared by the
REST API and metric reporters, so both show the same figures.

How they are computed (when asked, from the snapshot):

* counters as the task counted them; meters (``...PerSecond``) over the snapshot's
  ``"recent"`` growth (:class:`~.metric_sampler.MetricSampler`: about the last second), else
  over the subtask's run so far;
* busy / idle / backpressured time per second the same way; all backpressure is *hard* (a
  task waiting for credit blocks: streamkernel has no soft backpressure, so
  ``softBackPressuredTimeMsPerSecond`` and ``maxSoftBackPressureTimeMs`` are 0);
  ``maxHardBackPressureTimeMs`` the longest wait for credit of the last second;
* ``mailboxLatencyMs`` a histogram of the mailbox's last 60 waits (``_min``, ``_max``,
  ``_mean``, ``_median``, ``_p75`` ... ``_p999``, ``_stddev``), as Flink's REST API flattens it;
* buffers are the items of the channels (a batch of records, or an event); in-process channels
  carry objects, so their bytes (``numBytesInLocal``, a local queue's size) are 0, as are a
  changelog backend's (there is none);
* pool usage: the credits of the task's input channels in use (``inPoolUsage``; a channel's
  exclusive buffers count as used first, then its share of the gate's floating ones:
  ``inputExclusiveBuffersUsage``, ``inputFloatingBuffersUsage``), and of its output channels
  (``outPoolUsage``, over 1 with overdraft buffers as in Flink);
* source operators: ``currentEmitEventTimeLag`` (emit time minus the newest event time of the
  last batch), ``watermarkLag`` (now minus the output watermark), ``sourceIdleTime`` (since the
  last batch); sink operators: ``numRecordsSend`` (records written; a failed write fails the
  task, so ``numRecordsSendErrors`` stays 0).
"""

from __future__ import annotations

import time
from typing import Any, Mapping, Optional

from streamkernel.common.watermark_strategy import MIN_WATERMARK
from streamkernel.runtime.core.statistics import histogram_statistics

__all__ = ["task_metric_values", "metric_group_name", "time_ratios", "OPERATOR_NAME_MAX_LENGTH"]

#: Flink's ``metrics.operator-name.max-length`` default: longer operator names are cut.
OPERATOR_NAME_MAX_LENGTH = 80
_INVALID = str.maketrans({" ": "_", ".": "_", ":": "_", ",": "_"})


def metric_group_name(operator_name: str) -> str:
    """An operator's name as Flink's metric ids spell it: cut to 80 characters, and space, ``.``,
    ``:`` and ``,`` replaced by ``_`` (Flink's MetricQueryService filter).

        >>> metric_group_name("Source: numbers"), metric_group_name("count per key")
        ('Source__numbers', 'count_per_key')
    """
    return operator_name[:OPERATOR_NAME_MAX_LENGTH].translate(_INVALID)


def time_ratios(metrics: Optional[Mapping[str, Any]]) -> tuple[float, float, float]:
    """(backpressured, idle, busy) shares of the subtask's recent time (its whole run before a
    recent sample exists; 0 when unknown)."""
    if not metrics:
        return 0.0, 0.0, 0.0
    figures = metrics.get("recent") or metrics
    if not figures.get("uptime_ns"):
        return 0.0, 0.0, 0.0
    uptime = float(figures["uptime_ns"])
    back, idle, busy = (round(min(max(float(figures.get(k, 0)) / uptime, 0.0), 1.0), 3)
                        for k in ("backpressured_ns", "idle_ns", "busy_ns"))
    return back, idle, busy


class _Rates:
    """Per-second rates of the snapshot's counters: over ``recent``, else over the run."""

    def __init__(self, metrics: Mapping[str, Any]) -> None:
        recent = metrics.get("recent")
        self.figures: Mapping[str, Any] = recent if recent and recent.get("uptime_ns") else metrics
        self.seconds = float(self.figures.get("uptime_ns", 0)) / 1e9

    def of(self, key: str, operator: Optional[str] = None) -> float:
        figures = self.figures if operator is None else (self.figures.get("operators") or {}).get(operator, {})
        return round(float(figures.get(key, 0)) / self.seconds, 3) if self.seconds > 0 else 0.0


def _ratio(used: int, total: int) -> float:
    return round(used / total, 3) if total > 0 else 0.0


def task_metric_values(metrics: Optional[Mapping[str, Any]], now_ms: Optional[int] = None) -> dict[str, Any]:
    """Every metric of one subtask by Flink's metric id (module docstring); ``{}`` when unknown.
    ``now_ms``: the wall clock the source lags are measured at (default: now)."""
    if not metrics:
        return {}
    now = time.time_ns() // 1_000_000 if now_ms is None else now_ms
    rate = _Rates(metrics)
    back, idle, busy = time_ratios(metrics)
    has_inputs = bool(metrics.get("input_channels", 1))  # a source task has none (older snapshots: assume some)
    values: dict[str, Any] = {}
    for name, key in (("numRecordsIn", "records_in"), ("numRecordsOut", "records_out"), ("numBytesIn", "bytes_in"),
                      ("numBytesOut", "bytes_out"), ("numBuffersOut", "buffers_out"),
                      ("numFiredTimers", "fired_timers")):
        values[name] = int(metrics.get(key, 0))
        values[name + "PerSecond"] = rate.of(key)
    for name, key in (("numBuffersInLocal", "buffers_in_local"), ("numBuffersInRemote", "buffers_in_remote"),
                      ("numBytesInLocal", "bytes_in_local"), ("numBytesInRemote", "bytes_in_remote")):
        for prefix in ("", "Shuffle.Netty.Input."):  # the deprecated task ids and the shuffle service's
            values[prefix + name] = int(metrics.get(key, 0))
            values[prefix + name + "PerSecond"] = rate.of(key)
    values.update({
        "busyTimeMsPerSecond": round(busy * 1000, 1), "idleTimeMsPerSecond": round(idle * 1000, 1),
        "backPressuredTimeMsPerSecond": round(back * 1000, 1),
        "hardBackPressuredTimeMsPerSecond": round(back * 1000, 1), "softBackPressuredTimeMsPerSecond": 0.0,
        "maxHardBackPressureTimeMs": int(metrics.get("max_backpressure_ns", 0)) // 1_000_000,
        "maxSoftBackPressureTimeMs": 0,
        "accumulateBusyTimeMs": int(metrics.get("busy_ns", 0)) // 1_000_000,
        "accumulateIdleTimeMs": int(metrics.get("idle_ns", 0)) // 1_000_000,
        "accumulateBackPressuredTimeMs": int(metrics.get("backpressured_ns", 0)) // 1_000_000,
        "isBackPressured": bool(metrics.get("back_pressured", False)),
        "changelogBusyTimeMsPerSecond": 0.0,
        "mailboxMailsPerSecond": rate.of("mails"), "mailboxQueueSize": int(metrics.get("mailbox_queue", 0)),
        "initializationTime": int(metrics.get("initialization_ns", 0)) // 1_000_000,
        "checkpointStartDelayNanos": int(metrics.get("checkpoint_start_delay_ns", 0)),
        "Shuffle.Netty.Input.Buffers.inputQueueLength": int(metrics.get("input_queue_length", 0)),
        "Shuffle.Netty.Input.Buffers.inputQueueSize": int(metrics.get("input_queue_bytes", 0)),
        "Shuffle.Netty.Input.Buffers.inPoolUsage": _ratio(int(metrics.get("input_buffers_used", 0)),
                                                          int(metrics.get("input_buffers_total", 0))),
        "Shuffle.Netty.Input.Buffers.inputExclusiveBuffersUsage": _ratio(int(metrics.get("input_exclusive_used", 0)),
                                                                         int(metrics.get("input_exclusive_total", 0))),
        "Shuffle.Netty.Input.Buffers.inputFloatingBuffersUsage": _ratio(int(metrics.get("input_floating_used", 0)),
                                                                        int(metrics.get("input_floating_total", 0))),
        "Shuffle.Netty.Output.Buffers.outputQueueLength": int(metrics.get("output_queue_length", 0)),
        "Shuffle.Netty.Output.Buffers.outputQueueSize": int(metrics.get("output_queue_bytes", 0)),
        "Shuffle.Netty.Output.Buffers.outPoolUsage": _ratio(int(metrics.get("output_buffers_used", 0)),
                                                            int(metrics.get("output_buffers_total", 0))),
    })
    for stat, value in histogram_statistics(metrics.get("mailbox_latency_ms") or []).items():
        values[f"mailboxLatencyMs_{stat}"] = value
    if has_inputs:
        values["currentInputWatermark"] = metrics.get("input_watermark", MIN_WATERMARK)
        values["checkpointAlignmentTime"] = int(metrics.get("checkpoint_alignment_ns", 0))
    values.update(_operator_values(metrics, rate, now))
    return values


def _operator_values(metrics: Mapping[str, Any], rate: _Rates, now: int) -> dict[str, Any]:
    operators: Mapping[str, Mapping[str, Any]] = metrics.get("operators") or {}
    head = metrics.get("head_operator") or next(iter(operators), "")
    last = next(reversed(list(operators)), "") if operators else ""
    values: dict[str, Any] = {}
    for name, op in operators.items():
        group = metric_group_name(name)
        kind = op.get("kind", "")
        bytes_in = int(metrics.get("bytes_in", 0)) if name == head else 0
        bytes_out = int(metrics.get("bytes_out", 0)) if name == last else 0
        values.update({
            f"{group}.numRecordsIn": int(op.get("records_in", 0)), f"{group}.numRecordsOut": int(op.get("records_out", 0)),
            f"{group}.numRecordsInPerSecond": rate.of("records_in", name),
            f"{group}.numRecordsOutPerSecond": rate.of("records_out", name),
            f"{group}.numBytesIn": bytes_in, f"{group}.numBytesOut": bytes_out,
            f"{group}.numBytesInPerSecond": rate.of("bytes_in") if name == head else 0.0,
            f"{group}.numBytesOutPerSecond": rate.of("bytes_out") if name == last else 0.0,
            f"{group}.currentOutputWatermark": op.get("output_watermark", MIN_WATERMARK),
        })
        if kind != "source":
            values[f"{group}.currentInputWatermark"] = (metrics.get("input_watermark", MIN_WATERMARK) if name == head
                                                        else op.get("input_watermark", MIN_WATERMARK))
        if kind == "source":
            values.update(_source_values(group, op, metrics, now))
        elif kind == "sink":
            values.update({f"{group}.numRecordsSend": int(op.get("records_in", 0)), f"{group}.numRecordsSendErrors": 0})
    return values


def _source_values(group: str, op: Mapping[str, Any], metrics: Mapping[str, Any], now: int) -> dict[str, Any]:
    """FLIP-33's source metrics of a source operator."""
    values: dict[str, Any] = {f"{group}.numRecordsInErrors": 0}
    last_emit = int(op.get("last_emit_ms") or 0)
    event_time = op.get("last_event_time")
    watermark = op.get("output_watermark", MIN_WATERMARK)
    started_ms = now - int(metrics.get("uptime_ns", 0)) // 1_000_000
    values[f"{group}.sourceIdleTime"] = max(now - (last_emit or started_ms), 0)
    if last_emit and isinstance(event_time, int):
        values[f"{group}.currentEmitEventTimeLag"] = last_emit - event_time
    if watermark > MIN_WATERMARK:
        values[f"{group}.watermarkLag"] = now - watermark
    return values
