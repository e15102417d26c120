"""StatusWatermarkValve: Flink's rules for combining channel watermarks and idleness."""

from __future__ import annotations

import pytest

from streamkernel.common.watermark_strategy import MAX_WATERMARK, MIN_WATERMARK
from streamkernel.runtime.network import StatusWatermarkValve


def test_single_channel_forwards_increasing_watermarks_only():
    valve = StatusWatermarkValve(1)
    assert valve.output_watermark == MIN_WATERMARK
    assert valve.input_watermark(0, 5) == 5
    assert valve.input_watermark(0, 5) is None
    assert valve.input_watermark(0, 3) is None  # never backwards
    assert valve.input_watermark(0, 9) == 9
    assert valve.output_watermark == 9


def test_output_is_the_minimum_over_channels_and_advances_only_when_it_moves():
    valve = StatusWatermarkValve(3)
    assert valve.input_watermark(0, 10) is None
    assert valve.input_watermark(1, 20) is None
    assert valve.input_watermark(2, 15) == 10
    assert valve.input_watermark(1, 30) is None  # min still 10
    assert valve.input_watermark(0, 40) == 15
    assert valve.input_watermark(2, 50) == 30


def test_an_idle_channel_does_not_hold_the_minimum_back():
    valve = StatusWatermarkValve(2)
    valve.input_watermark(0, 10)
    assert valve.input_watermark_status(1, idle=True) == (10, None)
    assert valve.input_watermark(0, 12) == 12
    assert not valve.is_idle and valve.is_channel_idle(1)


def test_watermarks_on_an_idle_channel_are_ignored():
    valve = StatusWatermarkValve(2)
    valve.input_watermark(0, 10)
    valve.input_watermark(1, 10)
    valve.input_watermark_status(1, idle=True)
    assert valve.input_watermark(1, 100) is None
    assert valve.channel_watermark(1) == 10


def test_all_channels_idle_advances_to_the_max_then_reports_idle():
    valve = StatusWatermarkValve(2)
    valve.input_watermark(0, 10)
    valve.input_watermark(1, 20)  # output 10
    assert valve.input_watermark_status(1, idle=True) == (None, None)  # channel 0 still holds 10
    # the last active channel holds the output: going idle releases the max of all channels
    assert valve.input_watermark_status(0, idle=True) == (20, True)
    assert valve.is_idle
    assert valve.input_watermark_status(0, idle=True) == (None, None)  # no change, nothing to say


def test_any_channel_becoming_active_makes_the_task_active():
    valve = StatusWatermarkValve(2)
    valve.input_watermark_status(0, idle=True)
    assert valve.input_watermark_status(1, idle=True) == (None, True)
    assert valve.input_watermark_status(1, idle=False) == (None, False)
    assert valve.input_watermark_status(0, idle=False) == (None, None)  # already active


def test_a_reactivated_channel_behind_the_output_does_not_pull_it_back():
    valve = StatusWatermarkValve(2)
    valve.input_watermark(0, 5)
    valve.input_watermark(1, 5)
    valve.input_watermark_status(1, idle=True)
    assert valve.input_watermark(0, 100) == 100
    assert valve.input_watermark_status(1, idle=False) == (None, None)
    # channel 1 is behind (5 < 100): not aligned, so channel 0 alone drives the output
    assert valve.input_watermark(1, 50) is None
    assert valve.input_watermark(0, 120) == 120
    # once channel 1 catches up it holds the minimum again
    assert valve.input_watermark(1, 130) is None
    assert valve.input_watermark(0, 200) == 130


def test_a_finished_channel_no_longer_holds_the_watermark_back():
    valve = StatusWatermarkValve(3)
    valve.input_watermark(0, 10)
    valve.input_watermark(1, 50)
    valve.input_watermark(2, 60)
    assert valve.output_watermark == 10
    assert valve.channel_finished(0) == 50
    assert valve.channel_finished(0) is None  # only once
    assert valve.input_watermark(0, 999) is None  # nothing comes after the end
    assert valve.channel_finished(1) == 60
    assert valve.channel_finished(2) == MAX_WATERMARK  # every channel ended


def test_finishing_does_not_release_idle_channels():
    valve = StatusWatermarkValve(2)
    valve.input_watermark(0, 10)
    valve.input_watermark(1, 10)
    valve.input_watermark_status(1, idle=True)
    valve.input_watermark(0, 20)
    # channel 1 is idle, not ended: it may come back, so the output stays where it is
    assert valve.channel_finished(0) is None
    assert valve.output_watermark == 20
    assert valve.input_watermark_status(1, idle=False) == (None, None)
    assert valve.input_watermark(1, 30) == 30


def test_idle_then_finished_channel_counts_as_ended():
    valve = StatusWatermarkValve(2)
    valve.input_watermark_status(0, idle=True)
    assert valve.channel_finished(0) is None
    assert valve.input_watermark(1, 7) == 7
    assert valve.input_watermark_status(0, idle=False) == (None, None)  # ignored after the end
    assert valve.channel_finished(1) == MAX_WATERMARK


def test_a_valve_needs_a_channel():
    with pytest.raises(ValueError, match="num_channels"):
        StatusWatermarkValve(0)
