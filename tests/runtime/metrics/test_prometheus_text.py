"""Metric groups in Prometheus' text format with Flink's names: prefix and scope, labels from the scope
variables (excluded, added, characters replaced), filters, gauges of every kind, histograms as summaries.
prometheus_client's parser reads every text written here."""

from __future__ import annotations

import math

from prometheus_client.parser import text_string_to_metric_families

from streamkernel.runtime.metrics.groups import HistogramStatistics, MetricGroupSnapshot, MetricType
from streamkernel.runtime.metrics.prometheus_text import PrometheusText
from streamkernel.runtime.metrics.reporter_setup import PROMETHEUS_REPORTER_FACTORY, reporter_setups

OPERATOR = MetricGroupSnapshot(
    ("taskmanager", "job", "task", "operator"),
    {"job_name": "word count", "operator_name": "Source: words", "subtask_index": "0", "tm_id": "taskmanager-1"},
    {"numRecordsIn": 7, "numRecordsInPerSecond": 2.5, "idle": True, "path": "n/a",
     "currentInputWatermark": -9223372036854775808},
    {"numRecordsIn": MetricType.COUNTER, "numRecordsInPerSecond": MetricType.METER})


def _samples(groups: list, **options: str) -> dict[str, list[tuple[dict, float]]]:
    """Family name -> [(labels, value)] as prometheus_client's parser reads the text (its help and type checked)."""
    [setup] = reporter_setups({"metrics.reporter.prom.factory.class": PROMETHEUS_REPORTER_FACTORY,
                               **{f"metrics.reporter.prom.{k}": v for k, v in options.items()}})
    text = PrometheusText(setup).render(groups)
    found: dict[str, list[tuple[dict, float]]] = {}
    for family in text_string_to_metric_families(text):
        assert family.documentation.endswith(f"(scope: {'_'.join(groups[0].scope)})")
        found.setdefault(family.name, []).extend((s.labels, s.value) for s in family.samples)
        found.setdefault(f"type of {family.name}", []).append(({}, {"gauge": 0.0, "summary": 1.0}[family.type]))
    return found


def test_names_are_flink_prefix_scope_and_name_and_labels_the_variables() -> None:
    samples = _samples([OPERATOR])
    labels = {"job_name": "word_count", "operator_name": "Source:_words", "subtask_index": "0", "tm_id": "taskmanager_1"}
    assert samples["flink_taskmanager_job_task_operator_numRecordsIn"] == [(labels, 7.0)]
    assert samples["type of flink_taskmanager_job_task_operator_numRecordsIn"] == [({}, 0.0)]  # a gauge, as Flink's
    assert samples["flink_taskmanager_job_task_operator_numRecordsInPerSecond"] == [(labels, 2.5)]
    assert samples["flink_taskmanager_job_task_operator_idle"] == [(labels, 1.0)]  # a bool
    assert samples["flink_taskmanager_job_task_operator_path"] == [(labels, 0.0)]  # no number: 0, as Flink
    assert samples["flink_taskmanager_job_task_operator_currentInputWatermark"] == [(labels, -9223372036854775808.0)]


def test_variables_are_excluded_added_and_kept_verbatim_when_asked() -> None:
    odd = MetricGroupSnapshot(OPERATOR.scope, {**OPERATOR.variables, "job_name": 'say "hi"\\\n'}, {"numRecordsIn": 1})
    samples = _samples([odd], **{"scope.variables.excludes": "tm_id;subtask_index",
                                 "scope.variables.additional": "cluster:eu-1",
                                 "filterLabelValueCharacters": "false"})
    assert samples["flink_taskmanager_job_task_operator_numRecordsIn"] == [
        ({"job_name": 'say "hi"\\\n', "operator_name": "Source: words", "cluster": "eu-1"}, 1.0)]


def test_filters_leave_metrics_out() -> None:
    samples = _samples([OPERATOR], **{"filter.includes": "*.operator:numRecords*", "filter.excludes": "*:*:meter"})
    assert [name for name in samples if not name.startswith("type of")] == ["flink_taskmanager_job_task_operator_numRecordsIn"]


def test_one_family_holds_every_group_of_a_name() -> None:
    other = MetricGroupSnapshot(OPERATOR.scope, {**OPERATOR.variables, "subtask_index": "1"}, {"numRecordsIn": 9})
    samples = _samples([OPERATOR, other])
    assert [(labels["subtask_index"], value) for labels, value in
            samples["flink_taskmanager_job_task_operator_numRecordsIn"]] == [("0", 7.0), ("1", 9.0)]


def test_a_histogram_is_a_summary_of_quantiles_and_count_without_a_sum() -> None:
    latency = MetricGroupSnapshot(("taskmanager", "job"), {"job_name": "j"},
                                  {"latency": HistogramStatistics(4, (1.0, 2.0, 3.0, 4.0))},
                                  {"latency": MetricType.HISTOGRAM})
    samples = _samples([latency])
    assert samples["type of flink_taskmanager_job_latency"] == [({}, 1.0)]
    by_quantile = {labels.get("quantile", "count"): value for labels, value in samples["flink_taskmanager_job_latency"]}
    expected = {"count": 4.0, "0.0": 1.0, "0.5": 2.5, "0.75": 3.25, "0.95": 3.85, "0.98": 3.94, "0.99": 3.97,
                "0.999": 3.997, "1.0": 4.0}
    assert by_quantile.keys() == expected.keys()
    assert all(math.isclose(by_quantile[q], expected[q]) for q in expected)
    assert math.isnan(HistogramStatistics(0).quantile(0.5))
