"""The sampler behind per-second metrics: growth since a snapshot about a second old."""

from __future__ import annotations

from streamkernel.runtime.core.metric_sampler import RECENT_WINDOW_NS, MetricSampler

SECOND = RECENT_WINDOW_NS


def _snapshot(uptime_ns: int, records_in: int, operator_out: int = 0) -> dict:
    return {"uptime_ns": uptime_ns, "records_in": records_in, "busy_ns": uptime_ns // 2,
            "operators": {"map": {"records_in": records_in, "records_out": operator_out}}}


def test_no_recent_figures_until_an_earlier_sample_is_old_enough() -> None:
    sampler = MetricSampler()
    assert "recent" not in sampler.with_recent("a", _snapshot(0, 0))
    assert "recent" not in sampler.with_recent("a", _snapshot(SECOND // 10, 5))  # a tenth of a second: too short


def test_recent_figures_are_the_growth_over_about_a_second() -> None:
    sampler = MetricSampler()
    for step in range(5):  # samples every half second, 100 records each time
        metrics = sampler.with_recent("a", _snapshot(step * SECOND // 2, step * 100, step * 10))
    recent = metrics["recent"]
    assert recent["uptime_ns"] == SECOND and recent["records_in"] == 200  # since the sample a second old
    assert recent["busy_ns"] == SECOND // 2 and recent["operators"] == {"map": {"records_in": 200, "records_out": 20}}


def test_samples_of_ended_attempts_are_forgotten() -> None:
    sampler = MetricSampler()
    sampler.with_recent("a", _snapshot(0, 0))
    sampler.with_recent("b", _snapshot(0, 0))
    sampler.forget_all_but(["b"])
    assert "recent" not in sampler.with_recent("a", _snapshot(2 * SECOND, 10))  # starts over
    assert sampler.with_recent("b", _snapshot(2 * SECOND, 10))["recent"]["records_in"] == 10
