"""Metrics for reporters (Flink's ``runtime/metrics`` and ``flink-metrics-prometheus``).

* :mod:`.flink_metrics`: a TaskManager's and the JobManager's figures by Flink's metric names (the
  REST API reads them too; a task's are ``core/task_metric_values.py``, a job's ``jobmaster/job_metrics.py``).
* :mod:`.groups`: metric groups as reporters see them (logical scope, scope variables, values).
* :mod:`.reporter_setup`: ``metrics.reporters`` and ``metrics.reporter.<name>.*``, checked before a start;
  :mod:`.metric_filter`: Flink's ``filter.includes`` / ``filter.excludes``.
* :mod:`.prometheus` and :mod:`.prometheus_text`: Flink's Prometheus reporter (an HTTP endpoint, the text format).
* :mod:`.registry`: a process's reporters and the sources of its components' metric groups.

The components' sources live with them: a TaskManager's in
:mod:`streamkernel.runtime.taskmanager.metric_groups`, the JobManager's in
:mod:`streamkernel.runtime.minicluster.metric_reporting`.

The reporter's modules are imported only once a reporter starts: a process without one never loads them.
"""
