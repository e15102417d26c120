"""Metrics for reporters (Flink's ``runtime/metrics`` and ``flink-metrics-prometheus``).

* :mod:`.flink_metrics`: streamkernel's figures by Flink's metric names, the one mapping the REST
  API and the reporters read; :mod:`.recent`: the last second's busy / idle / backpressured time.
* :mod:`.groups`: metric groups as reporters see them (logical scope, scope variables, values).
* :mod:`.reporter_setup`: ``metrics.reporters`` and ``metrics.reporter.<name>.*``, checked before a start;
  :mod:`.metric_filter`: Flink's ``filter.includes`` / ``filter.excludes``.
* :mod:`.prometheus` and :mod:`.prometheus_families`: Flink's Prometheus reporter.
* :mod:`.registry`: a process's reporters and the sources of its components' metric groups.

The components' sources live with them: a TaskManager's in
:mod:`streamkernel.runtime.taskmanager.metric_groups`, the JobManager's in
:mod:`streamkernel.runtime.minicluster.metric_reporting`.

prometheus_client is imported only once a reporter starts: a process without one never loads it.
"""
