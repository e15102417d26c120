"""Duration, Time, Instant and to_millis."""

from __future__ import annotations

import datetime
import pickle

import pytest

from streamkernel.common import Duration, Instant, Time, to_millis
from streamkernel.errors import InvalidProgramError


@pytest.mark.parametrize(
    "duration, millis",
    [
        (Duration.of_days(2), 2 * 24 * 3600 * 1000),
        (Duration.of_hours(3), 3 * 3600 * 1000),
        (Duration.of_minutes(5), 300_000),
        (Duration.of_seconds(7), 7000),
        (Duration.of_millis(1500), 1500),
        (Duration.of_nanos(2_999_999), 2),  # truncated like Java's toMillis
    ],
)
def test_duration_factories_convert_to_milliseconds(duration, millis):
    assert duration.to_milliseconds() == millis


def test_duration_is_a_hashable_ordered_value():
    assert Duration.of_seconds(60) == Duration.of_minutes(1)
    assert len({Duration.of_seconds(60), Duration.of_minutes(1), Duration.of_millis(1)}) == 2
    assert Duration.of_millis(999) < Duration.of_seconds(1) <= Duration.of_millis(1000)
    assert sorted([Duration.of_hours(1), Duration.of_seconds(1)])[0] == Duration.of_seconds(1)
    assert Duration.of_seconds(1) != Time.seconds(1)  # different concepts, as in PyFlink


def test_duration_is_immutable_and_pickles():
    d = Duration.of_seconds(3)
    with pytest.raises(AttributeError):
        d._nanos = 5  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(d)) == d


def test_duration_str_uses_flinks_highest_exact_unit_and_repr_round_trips():
    assert str(Duration.of_seconds(120)) == "2 min"
    assert str(Duration.of_millis(1500)) == "1500 ms"
    assert str(Duration.of_hours(48)) == "2 d"
    for d in (Duration.of_minutes(90), Duration.of_millis(7), Duration.of_nanos(1500)):
        assert eval(repr(d), {"Duration": Duration}) == d


def test_time_factories_and_value_semantics():
    assert Time.days(1).to_milliseconds() == 86_400_000
    assert Time.hours(2) == Time.minutes(120) == Time.seconds(7200)
    assert Time.milliseconds(5) < Time.seconds(1)
    assert hash(Time.seconds(1)) == hash(Time.milliseconds(1000))
    assert str(Time.seconds(2)) == "2000 ms"
    assert pickle.loads(pickle.dumps(Time.minutes(3))) == Time.minutes(3)


def test_instant_epoch_millis_round_trip_including_negative():
    for millis in (0, 1, 1_700_000_000_123, -1, -1001):
        instant = Instant.of_epoch_milli(millis)
        assert instant.to_epoch_milli() == millis
        assert 0 <= instant.nanos < 1_000_000_000
    assert Instant.of_epoch_milli(-1) < Instant.of_epoch_milli(0)
    assert repr(Instant.of_epoch_milli(1500)) == "Instant<1, 500000000>"


def test_to_millis_accepts_every_spelling_and_names_the_argument():
    assert to_millis(Duration.of_seconds(2)) == 2000
    assert to_millis(Time.minutes(1)) == 60_000
    assert to_millis(datetime.timedelta(seconds=1, microseconds=2500)) == 1002
    assert to_millis(42) == 42
    with pytest.raises(InvalidProgramError, match="window_size"):
        to_millis("10 s", "window_size")
    with pytest.raises(InvalidProgramError):
        to_millis(True)


def test_factories_reject_non_integers():
    with pytest.raises(InvalidProgramError, match="seconds"):
        Duration.of_seconds(1.5)  # type: ignore[arg-type]
    with pytest.raises(InvalidProgramError):
        Time.seconds("3")  # type: ignore[arg-type]


def test_zero_duration_prints_in_milliseconds() -> None:
    from streamkernel.common import Duration

    assert str(Duration.of_millis(0)) == "0 ms"
    assert repr(Duration.of_seconds(0)) == "Duration.of_millis(0)"
