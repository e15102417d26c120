"""``metrics.reporters`` and ``metrics.reporter.<name>.*`` as Flink reads them, and each wrong value
failing before anything starts, naming its key."""

from __future__ import annotations

import threading

import pytest

from streamkernel.errors import IllegalConfigurationError
from streamkernel.runtime.metrics.groups import MetricType
from streamkernel.runtime.metrics.reporter_setup import PROMETHEUS_REPORTER_FACTORY, port_candidates, reporter_setups
from streamkernel.runtime.minicluster.minicluster import MiniCluster

PROM = {"metrics.reporter.prom.factory.class": PROMETHEUS_REPORTER_FACTORY}


def test_no_reporter_key_means_no_reporter() -> None:
    assert reporter_setups({"metrics.latency.interval": "0"}) == []


def test_flinks_keys_configure_a_reporter() -> None:
    [setup] = reporter_setups({**PROM, "metrics.reporter.prom.port": "9249-9251,9300",
                               "metrics.reporter.prom.scope.variables.excludes": "task_attempt_id;<tm_id>",
                               "metrics.reporter.prom.scope.variables.additional": "cluster:prod, team:data",
                               "metrics.reporter.prom.filterLabelValueCharacters": "false"})
    assert (setup.name, setup.ports, setup.port_text) == ("prom", (9249, 9250, 9251, 9300), "9249-9251,9300")
    assert setup.excluded_variables == {"task_attempt_id", "tm_id"}
    assert dict(setup.additional_variables) == {"cluster": "prod", "team": "data"}
    assert setup.filter_label_values is False
    assert reporter_setups(PROM)[0].ports == (9249,)  # Flink's default port


def test_metrics_reporters_chooses_among_the_configured_ones() -> None:
    two = {**PROM, "metrics.reporter.other.factory.class": PROMETHEUS_REPORTER_FACTORY}
    assert [s.name for s in reporter_setups(two)] == ["other", "prom"]
    assert [s.name for s in reporter_setups({**two, "metrics.reporters": "prom"})] == ["prom"]


def test_filters_select_by_scope_name_and_type() -> None:
    [setup] = reporter_setups({**PROM, "metrics.reporter.prom.filter.includes": "*.job.task.operator:numRecords*;jobmanager*",
                               "metrics.reporter.prom.filter.excludes": "*:*PerSecond:meter"})
    accepts = setup.metric_filter.accepts
    assert accepts("taskmanager.job.task.operator", "numRecordsIn", MetricType.COUNTER)
    assert not accepts("taskmanager.job.task.operator", "numRecordsInPerSecond", MetricType.METER)  # excluded
    assert not accepts("taskmanager.job.task", "numRecordsIn", MetricType.COUNTER)  # another scope
    assert accepts("jobmanager.job", "uptime", MetricType.GAUGE)
    [by_type] = reporter_setups({**PROM, "metrics.reporter.prom.filter.includes": "*:*:counter,meter"})
    assert by_type.metric_filter.accepts("x", "numRecordsInPerSecond", MetricType.METER)
    assert not by_type.metric_filter.accepts("x", "busyTimeMsPerSecond", MetricType.GAUGE)


@pytest.mark.parametrize("extra, key", [
    ({"metrics.reporter.prom.port": "9260-9249"}, "metrics.reporter.prom.port"),
    ({"metrics.reporter.prom.port": "92x9"}, "metrics.reporter.prom.port"),
    ({"metrics.reporter.prom.port": "70000"}, "metrics.reporter.prom.port"),
    ({"metrics.reporter.prom.factory.class": "org.apache.flink.metrics.jmx.JMXReporterFactory"},
     "metrics.reporter.prom.factory.class"),
    ({"metrics.reporter.prom.filter.includes": "*:*:timer"}, "metrics.reporter.prom.filter.includes"),
    ({"metrics.reporter.prom.filter.excludes": ":x"}, "metrics.reporter.prom.filter.excludes"),
    ({"metrics.reporter.prom.scope.variables.additional": "cluster"}, "metrics.reporter.prom.scope.variables.additional"),
    ({"metrics.reporter.prom.filterLabelValueCharacters": "maybe"}, "metrics.reporter.prom.filterLabelValueCharacters"),
    ({"metrics.reporters": "prom,jmx"}, "metrics.reporters"),
])
def test_a_wrong_value_names_its_key(extra: dict, key: str) -> None:
    with pytest.raises(IllegalConfigurationError, match=f"'{key}'"):
        reporter_setups({**PROM, **extra})


def test_flink_1x_class_key_is_refused_with_the_factory_key_to_set() -> None:
    with pytest.raises(IllegalConfigurationError, match="metrics.reporter.prom.factory.class: org.apache.flink"):
        reporter_setups({"metrics.reporter.prom.class": "org.apache.flink.metrics.prometheus.PrometheusReporter"})


def test_a_cluster_with_a_bad_reporter_key_fails_before_anything_starts() -> None:
    before = set(threading.enumerate())
    with pytest.raises(IllegalConfigurationError, match="'metrics.reporter.prom.port'"):
        MiniCluster(1, 1, configuration={**PROM, "metrics.reporter.prom.port": "9249-"})
    assert set(threading.enumerate()) <= before


def test_port_lists_and_any_free_port() -> None:
    assert port_candidates("0", "k") == (0,)
    assert port_candidates(" 9249 , 9251-9252", "k") == (9249, 9251, 9252)
