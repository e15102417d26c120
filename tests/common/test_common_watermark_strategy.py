"""WatermarkStrategy, TimestampAssigner and the watermark generators."""

from __future__ import annotations

import pickle

import cloudpickle
import pytest

from streamkernel.common import MAX_WATERMARK, MIN_WATERMARK, Duration, Time, TimestampAssigner, WatermarkStrategy
from streamkernel.common.watermark_strategy import BoundedOutOfOrdernessWatermarks, NoWatermarksGenerator
from streamkernel.errors import InvalidFunctionError, InvalidProgramError


class SecondField(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


def test_watermark_constants_are_javas_long_bounds():
    assert MIN_WATERMARK == -(2**63) and MAX_WATERMARK == 2**63 - 1


def test_bounded_out_of_orderness_trails_the_max_timestamp():
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(5))
    assert strategy.max_out_of_orderness_ms == 5000
    gen = strategy.create_watermark_generator()
    assert gen.on_periodic_emit() is None  # nothing seen yet
    assert gen.on_event("a", 10_000) is None
    assert gen.on_periodic_emit() == 10_000 - 5000 - 1
    gen.on_event("late", 3_000)  # an older event never moves the watermark back
    assert gen.on_periodic_emit() == 4_999
    gen.on_event("b", 20_000)
    assert gen.on_periodic_emit() == 14_999


def test_monotonous_is_zero_out_of_orderness():
    gen = WatermarkStrategy.for_monotonous_timestamps().create_watermark_generator()
    assert isinstance(gen, BoundedOutOfOrdernessWatermarks)
    gen.on_event(None, 100)
    assert gen.on_periodic_emit() == 99


def test_watermark_does_not_underflow_min_watermark():
    gen = BoundedOutOfOrdernessWatermarks(10)
    gen.on_event(None, MIN_WATERMARK)
    assert gen.on_periodic_emit() == MIN_WATERMARK


def test_each_call_creates_an_independent_generator():
    strategy = WatermarkStrategy.for_monotonous_timestamps()
    first, second = strategy.create_watermark_generator(), strategy.create_watermark_generator()
    first.on_event(None, 50)
    assert second.on_periodic_emit() is None


def test_no_watermarks_never_emits():
    strategy = WatermarkStrategy.no_watermarks()
    gen = strategy.create_watermark_generator()
    assert isinstance(gen, NoWatermarksGenerator)
    gen.on_event(None, 10**12)
    assert gen.on_periodic_emit() is None
    assert strategy.max_out_of_orderness_ms is None


def test_settings_default_to_none_and_chain_like_pyflink():
    base = WatermarkStrategy.for_bounded_out_of_orderness(Time.seconds(1))
    assert base.timestamp_assigner is None and base.idle_timeout_ms is None and base.watermark_alignment is None
    chained = base.with_timestamp_assigner(SecondField()).with_idleness(Duration.of_minutes(1))
    chained = chained.with_watermark_alignment("g", Duration.of_seconds(20))
    assert chained is base  # PyFlink sets the option and returns the same strategy
    assert chained.idle_timeout_ms == 60_000
    assert chained.timestamp_assigner.extract_timestamp(("x", 42), MIN_WATERMARK) == 42
    alignment = chained.watermark_alignment
    assert (alignment.watermark_group, alignment.max_allowed_watermark_drift_ms, alignment.update_interval_ms) == (
        "g", 20_000, 1000)


def test_plain_functions_are_wrapped_as_assigners():
    two = WatermarkStrategy.no_watermarks().with_timestamp_assigner(lambda v, ts: v + ts)
    assert isinstance(two.timestamp_assigner, TimestampAssigner)
    assert two.timestamp_assigner.extract_timestamp(1, 10) == 11
    one = WatermarkStrategy.no_watermarks().with_timestamp_assigner(lambda v: v * 2)
    assert one.timestamp_assigner.extract_timestamp(21, MIN_WATERMARK) == 42


def test_misuse_is_reported_at_the_call():
    with pytest.raises(InvalidFunctionError, match="with_timestamp_assigner"):
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(42)
    with pytest.raises(InvalidProgramError, match="max_out_of_orderness"):
        WatermarkStrategy.for_bounded_out_of_orderness("5 s")
    with pytest.raises(InvalidProgramError, match="negative"):
        WatermarkStrategy.for_bounded_out_of_orderness(-5)
    with pytest.raises(InvalidProgramError, match="idle_timeout"):
        WatermarkStrategy.for_monotonous_timestamps().with_idleness(Duration.of_millis(0))
    with pytest.raises(InvalidProgramError, match="watermark_group"):
        WatermarkStrategy.for_monotonous_timestamps().with_watermark_alignment("", Duration.of_seconds(1))


def test_strategy_pickles_with_a_lambda_assigner_and_has_a_readable_repr():
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(3)).with_timestamp_assigner(
        lambda v, ts: v[0])
    back = cloudpickle.loads(cloudpickle.dumps(strategy))
    assert back.timestamp_assigner.extract_timestamp((7,), 0) == 7
    assert back.max_out_of_orderness_ms == 3000
    assert repr(WatermarkStrategy.for_monotonous_timestamps().with_idleness(Duration.of_seconds(2))) == (
        "WatermarkStrategy.for_monotonous_timestamps().with_idleness(Duration.of_seconds(2))")
    plain = pickle.loads(pickle.dumps(WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(9))))
    assert plain.max_out_of_orderness_ms == 9
