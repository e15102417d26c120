"""Metric groups in Prometheus' text format with Flink's names: prefix and scope, labels from the scope
variables (excluded, added, characters replaced), filters, gauges of every kind, histograms as summaries."""

from __future__ import annotations

import math

from prometheus_client import CollectorRegistry, generate_latest

from streamkernel.runtime.metrics.groups import HistogramStatistics, MetricGroupSnapshot, MetricType
from streamkernel.runtime.metrics.prometheus_families import prometheus_families
from streamkernel.runtime.metrics.reporter_setup import PROMETHEUS_REPORTER_FACTORY, reporter_setups

OPERATOR = MetricGroupSnapshot(
    ("taskmanager", "job", "task", "operator"),
    {"job_name": "word count", "operator_name": "Source: words", "subtask_index": "0", "tm_id": "taskmanager-1"},
    {"numRecordsIn": 7, "numRecordsInPerSecond": 2.5, "idle": True, "path": "n/a"},
    {"numRecordsIn": MetricType.COUNTER, "numRecordsInPerSecond": MetricType.METER})


def _text(groups: list, **options: str) -> str:
    [setup] = reporter_setups({"metrics.reporter.prom.factory.class": PROMETHEUS_REPORTER_FACTORY,
                               **{f"metrics.reporter.prom.{k}": v for k, v in options.items()}})

    class Families:
        def collect(self) -> list:
            return prometheus_families(groups, setup)

    registry = CollectorRegistry(auto_describe=False)
    registry.register(Families())  # type: ignore[arg-type]
    return generate_latest(registry).decode()


def test_names_are_flink_prefix_scope_and_name_and_labels_the_variables() -> None:
    text = _text([OPERATOR])
    assert "# TYPE flink_taskmanager_job_task_operator_numRecordsIn gauge" in text
    assert "# HELP flink_taskmanager_job_task_operator_numRecordsIn numRecordsIn (scope: taskmanager_job_task_operator)" in text
    assert ('flink_taskmanager_job_task_operator_numRecordsIn{job_name="word_count",operator_name="Source:_words",'
            'subtask_index="0",tm_id="taskmanager_1"} 7.0') in text
    assert "flink_taskmanager_job_task_operator_numRecordsInPerSecond{" in text and "} 2.5" in text
    assert "flink_taskmanager_job_task_operator_idle{" in text and "} 1.0" in text  # a bool
    assert "flink_taskmanager_job_task_operator_path{" in text and "} 0.0" in text  # no number: 0, as Flink


def test_variables_are_excluded_added_and_kept_verbatim_when_asked() -> None:
    text = _text([OPERATOR], **{"scope.variables.excludes": "tm_id;subtask_index",
                                "scope.variables.additional": "cluster:eu-1",
                                "filterLabelValueCharacters": "false"})
    assert ('flink_taskmanager_job_task_operator_numRecordsIn{cluster="eu-1",job_name="word count",'
            'operator_name="Source: words"} 7.0') in text


def test_filters_leave_metrics_out() -> None:
    text = _text([OPERATOR], **{"filter.includes": "*.operator:numRecords*", "filter.excludes": "*:*:meter"})
    assert "flink_taskmanager_job_task_operator_numRecordsIn{" in text
    assert "numRecordsInPerSecond" not in text and "_idle" not in text


def test_one_family_holds_every_group_of_a_name() -> None:
    other = MetricGroupSnapshot(OPERATOR.scope, {**OPERATOR.variables, "subtask_index": "1"}, {"numRecordsIn": 9})
    text = _text([OPERATOR, other])
    assert text.count("# TYPE flink_taskmanager_job_task_operator_numRecordsIn gauge") == 1
    assert 'subtask_index="1",tm_id="taskmanager_1"} 9.0' in text


def test_a_histogram_is_a_summary_of_quantiles_and_count_without_a_sum() -> None:
    latency = MetricGroupSnapshot(("taskmanager", "job"), {"job_name": "j"},
                                  {"latency": HistogramStatistics(4, (1.0, 2.0, 3.0, 4.0))},
                                  {"latency": MetricType.HISTOGRAM})
    text = _text([latency])
    assert "# TYPE flink_taskmanager_job_latency summary" in text
    assert 'flink_taskmanager_job_latency_count{job_name="j"} 4.0' in text
    assert 'flink_taskmanager_job_latency{job_name="j",quantile="0.0"} 1.0' in text
    assert 'flink_taskmanager_job_latency{job_name="j",quantile="0.5"} 2.5' in text
    assert 'flink_taskmanager_job_latency{job_name="j",quantile="1.0"} 4.0' in text
    assert "_sum" not in text
    assert math.isnan(HistogramStatistics(0).quantile(0.5))
