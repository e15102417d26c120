"""Flink's task and operator metrics computed from a TaskMetrics snapshot (no cluster)."""

from __future__ import annotations

from streamkernel.common.watermark_strategy import MIN_WATERMARK
from streamkernel.runtime.core.task_metric_values import metric_group_name, task_metric_values

SECOND = 1_000_000_000


def _snapshot(**figures: object) -> dict:
    base: dict = {"uptime_ns": 10 * SECOND, "records_in": 1000, "records_out": 900, "busy_ns": 2 * SECOND,
                  "idle_ns": 7 * SECOND, "backpressured_ns": SECOND, "input_channels": 2,
                  "input_watermark": 500, "operators": {}}
    base.update(figures)
    return base


def test_rates_are_over_the_recent_figures_else_over_the_run() -> None:
    values = task_metric_values(_snapshot())
    assert values["numRecordsInPerSecond"] == 100.0 and values["busyTimeMsPerSecond"] == 200.0  # over the run
    recent = {"uptime_ns": SECOND, "records_in": 300, "busy_ns": SECOND // 2, "idle_ns": SECOND // 2,
              "backpressured_ns": 0, "mails": 4, "fired_timers": 20}
    values = task_metric_values(_snapshot(recent=recent, mails=40, fired_timers=90))
    assert values["numRecordsInPerSecond"] == 300.0 and values["busyTimeMsPerSecond"] == 500.0
    assert values["mailboxMailsPerSecond"] == 4.0 and values["numFiredTimersPerSecond"] == 20.0
    assert values["numFiredTimers"] == 90 and values["accumulateBusyTimeMs"] == 2000
    assert values["hardBackPressuredTimeMsPerSecond"] == values["backPressuredTimeMsPerSecond"] == 0.0
    assert values["softBackPressuredTimeMsPerSecond"] == 0.0 and values["maxSoftBackPressureTimeMs"] == 0


def test_the_mailbox_latency_is_a_histogram_flattened_as_flinks_rest_api_does() -> None:
    values = task_metric_values(_snapshot(mailbox_latency_ms=[1.0, 3.0], mailbox_queue=2))
    assert values["mailboxLatencyMs_min"] == 1.0 and values["mailboxLatencyMs_max"] == 3.0
    assert values["mailboxLatencyMs_mean"] == values["mailboxLatencyMs_median"] == 2.0
    assert {f"mailboxLatencyMs_{s}" for s in ("p75", "p90", "p95", "p98", "p99", "p999", "stddev")} <= set(values)
    assert values["mailboxQueueSize"] == 2


def test_buffers_by_local_and_remote_channel_and_the_pools_in_use() -> None:
    values = task_metric_values(_snapshot(
        buffers_in_local=40, buffers_in_remote=10, bytes_in_remote=5000, buffers_out=33,
        input_buffers_used=3, input_buffers_total=12, input_exclusive_used=2, input_exclusive_total=4,
        input_floating_used=1, input_floating_total=8, output_buffers_used=5, output_buffers_total=4,
        input_queue_length=3, input_queue_bytes=1500))
    assert values["numBuffersInLocal"] == values["Shuffle.Netty.Input.numBuffersInLocal"] == 40
    assert values["numBytesInRemote"] == 5000 and values["numBytesInLocal"] == 0 and values["numBuffersOut"] == 33
    assert values["Shuffle.Netty.Input.Buffers.inPoolUsage"] == 0.25
    assert values["Shuffle.Netty.Input.Buffers.inputExclusiveBuffersUsage"] == 0.5
    assert values["Shuffle.Netty.Input.Buffers.inputFloatingBuffersUsage"] == 0.125
    assert values["Shuffle.Netty.Output.Buffers.outPoolUsage"] == 1.25  # overdraft: over 100%, as Flink's
    assert values["Shuffle.Netty.Input.Buffers.inputQueueSize"] == 1500


def test_a_source_task_has_no_input_watermark_nor_alignment() -> None:
    source = task_metric_values(_snapshot(input_channels=0, checkpoint_start_delay_ns=7))
    assert "currentInputWatermark" not in source and "checkpointAlignmentTime" not in source
    assert source["checkpointStartDelayNanos"] == 7
    assert task_metric_values(_snapshot(checkpoint_alignment_ns=9))["checkpointAlignmentTime"] == 9


def test_operators_under_flinks_metric_group_names_with_source_and_sink_metrics() -> None:
    operators = {
        "Source: numbers": {"records_in": 100, "records_out": 100, "output_watermark": 4_000, "kind": "source",
                            "last_emit_ms": 9_000, "last_event_time": 4_500, "input_watermark": MIN_WATERMARK},
        "plus one": {"records_in": 100, "records_out": 100, "input_watermark": 3_000, "output_watermark": 3_000},
        "Sink: discard": {"records_in": 100, "records_out": 0, "kind": "sink", "input_watermark": 2_000,
                          "output_watermark": 2_000}}
    values = task_metric_values(_snapshot(operators=operators, head_operator="Source: numbers", input_channels=0,
                                          bytes_out=777), now_ms=10_000)
    assert values["Source__numbers.currentEmitEventTimeLag"] == 4_500  # emitted at 9000 what happened at 4500
    assert values["Source__numbers.watermarkLag"] == 6_000 and values["Source__numbers.sourceIdleTime"] == 1_000
    assert values["Source__numbers.numRecordsInErrors"] == 0
    assert "Source__numbers.currentInputWatermark" not in values
    assert values["plus_one.currentInputWatermark"] == 3_000 and values["plus_one.currentOutputWatermark"] == 3_000
    assert values["Sink__discard.numRecordsSend"] == 100 and values["Sink__discard.numRecordsSendErrors"] == 0
    assert values["Sink__discard.numBytesOut"] == 777 and values["plus_one.numBytesOut"] == 0  # the chain's last


def test_metric_group_names_are_flinks() -> None:
    assert metric_group_name("discard: Writer") == "discard__Writer"
    assert metric_group_name("a.b,c") == "a_b_c" and len(metric_group_name("x" * 100)) == 80
