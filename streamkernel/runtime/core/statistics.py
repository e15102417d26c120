"""Statistics over a handful of values, computed as Flink computes them.

Flink's histograms (``DescriptiveStatisticsHistogram``: a task's ``mailboxLatencyMs``, the
checkpoint summaries) and the REST API's per-vertex aggregates (``aggregated`` in
``/jobs/:jobid/vertices/:vertexid``) take their quantiles from Apache Commons Math's
``Percentile`` with its default (``LEGACY``) estimation: the position of quantile ``p`` among
``n`` sorted values is ``p * (n + 1)``, interpolated between its neighbours, clamped to the
smallest and largest value. :func:`percentile` does the same, so two values 1912 and 1948 have
the median 1930 and the 25th percentile 1912, as Flink's REST API shows them.

Pure functions over lists; callers compute them when asked (a REST request, a report), never
on a task's hot path.
"""

from __future__ import annotations

import math
from typing import Sequence

__all__ = ["percentile", "histogram_statistics", "HISTOGRAM_QUANTILES"]

#: The quantiles a Flink histogram reports (``_median`` is the 0.5 one), in Flink's order.
HISTOGRAM_QUANTILES = (("p75", 0.75), ("p90", 0.90), ("p95", 0.95), ("p98", 0.98), ("p99", 0.99),
                       ("p999", 0.999))


def percentile(ordered: Sequence[float], quantile: float) -> float:
    """Commons Math's ``Percentile`` (LEGACY estimation) of the sorted ``ordered`` at
    ``quantile`` (0 < quantile <= 1); NaN for no values.

        >>> percentile([1912, 1948], 0.5), percentile([1912, 1948], 0.25), percentile([1, 2, 3, 4], 0.9)
        (1930.0, 1912.0, 4.0)
    """
    n = len(ordered)
    if n == 0:
        return math.nan
    if n == 1:
        return float(ordered[0])
    position = quantile * (n + 1)
    if position < 1:
        return float(ordered[0])
    if position >= n:
        return float(ordered[-1])
    lower = math.floor(position)
    fraction = position - lower
    low, high = float(ordered[lower - 1]), float(ordered[lower])
    return low + fraction * (high - low)


def histogram_statistics(values: Sequence[float]) -> dict[str, float]:
    """A Flink histogram's statistics as its metric ids name them (``min``, ``max``, ``mean``,
    ``median``, ``p75`` ... ``p999``, ``stddev``: the sample standard deviation); all 0 for no
    values, as Flink's empty histogram.

        >>> histogram_statistics([2.0, 4.0])["mean"], histogram_statistics([])["p99"]
        (3.0, 0.0)
    """
    ordered = sorted(float(v) for v in values)
    n = len(ordered)
    if n == 0:
        return {"min": 0.0, "max": 0.0, "mean": 0.0, "median": 0.0, **{name: 0.0 for name, _ in HISTOGRAM_QUANTILES},
                "stddev": 0.0}
    mean = sum(ordered) / n
    variance = sum((v - mean) ** 2 for v in ordered) / (n - 1) if n > 1 else 0.0
    return {"min": ordered[0], "max": ordered[-1], "mean": mean, "median": percentile(ordered, 0.5),
            **{name: percentile(ordered, q) for name, q in HISTOGRAM_QUANTILES}, "stddev": math.sqrt(variance)}
