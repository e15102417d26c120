"""TaskManagers: the workers that run subtasks in task slots (Flink's ``taskexecutor``).

One TaskManager implementation for every backend; only how it starts and how it is
reached differ (``docs/architecture.md``, "Scale out").

* :mod:`.gateway`: the TaskExecutorGateway and the messages TaskManagers send and receive;
  :mod:`.proxy`: the same over RPC.
* :class:`~.task_executor.TaskExecutor`: the TaskManager itself, the same for every backend.
* :mod:`.checkpoint_responder`: how tasks acknowledge checkpoints to their JobMaster and
  where they write their state.
* :mod:`.local`: the ``local`` backend, TaskManagers as objects of this process.
* :mod:`.launcher`: how remote TaskManagers start: :mod:`.process` (child processes) or
  :mod:`.spark` (long-running Spark tasks, hosted by :mod:`.spark_host`, tracked by
  :mod:`.spark_hosts`, ended by :mod:`.spark_stop`; the session from
  :mod:`.spark_session`, slots checked by :mod:`.spark_resources`).
* :mod:`.worker`: the entry point a child process or a Spark task runs; with
  :mod:`.forwarding` and :mod:`.driver_services` for output and the collect and pandas
  sinks that live in the driver.

Importing this package does not import pyspark (only :mod:`.spark` does, when chosen).
"""
