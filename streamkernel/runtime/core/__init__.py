"""The bottom of the runtime: types every component shares and that import none of them.

* :mod:`.records`: what flows on a channel (StreamRecord, Watermark, CheckpointBarrier,
  LatencyMarker, end of partition).
* :mod:`.deployment`: ExecutionAttemptId, ExecutionState and the TaskDeploymentDescriptor a
  JobMaster sends to a TaskManager.
* :mod:`.clock`: the system clock and the manual clock of tests.
* :mod:`.metrics`: a task's counters and the job's aggregated metrics.
* :mod:`.keys`: the key selector's plain function, what the runtime calls per record.
* :mod:`.registry`: class name -> "module:Class" tables resolved on first use (operators,
  source readers, sink writers).
* :mod:`.engine_log`: where the engine logs (a cluster's log file, not the program's logger).
"""
