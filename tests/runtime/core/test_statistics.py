"""Quantiles and histogram statistics as Flink computes them (Commons Math's LEGACY percentile)."""

from __future__ import annotations

import math

from streamkernel.runtime.core.statistics import histogram_statistics, percentile


def test_quantiles_of_two_subtasks_are_those_flink_showed() -> None:
    # a real Flink 2.3 vertex's aggregated accumulated-busy-time of two subtasks (1912, 1948):
    # median 1930, p25 1912, p75 1948, p95 1948
    ordered = [1912, 1948]
    assert [percentile(ordered, q) for q in (0.5, 0.25, 0.75, 0.95)] == [1930.0, 1912.0, 1948.0, 1948.0]


def test_quantiles_interpolate_between_neighbours_and_clamp() -> None:
    ordered = [10, 20, 30, 40]
    assert percentile(ordered, 0.5) == 25.0  # position 2.5: halfway between 20 and 30
    assert percentile(ordered, 0.1) == 10.0 and percentile(ordered, 0.99) == 40.0
    assert percentile([7], 0.5) == 7.0 and math.isnan(percentile([], 0.5))


def test_histogram_statistics_name_flinks_fields() -> None:
    stats = histogram_statistics([1.0, 2.0, 3.0, 4.0])
    assert set(stats) == {"min", "max", "mean", "median", "p75", "p90", "p95", "p98", "p99", "p999", "stddev"}
    assert (stats["min"], stats["max"], stats["mean"], stats["median"]) == (1.0, 4.0, 2.5, 2.5)
    assert math.isclose(stats["stddev"], math.sqrt(5 / 3))  # the sample standard deviation
    assert set(histogram_statistics([]).values()) == {0.0}
