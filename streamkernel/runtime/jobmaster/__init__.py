"""The JobMaster: runs one job (Flink's ``runtime.jobmaster`` and its scheduler).

* :class:`~.jobmaster.JobMaster`: ExecutionGraph -> slots -> deployed subtasks -> a terminal
  state; its driver. Its decisions are the pure :class:`~.job_state_machine.JobStateMachine`
  whose actions are in :mod:`.job_actions`; :mod:`.execution_deployer` deploys and cancels
  subtasks; :mod:`.scheduler` writes the task deployment descriptors; :mod:`.restart` holds
  the restart strategies; :mod:`.failure_injection` resolves ``MiniCluster.failures.fail_operator``
  targets; :mod:`.job_status` the published status snapshots.
* :class:`~.checkpointing.JobCheckpointing` drives the job's CheckpointCoordinator;
  :class:`~.state_recovery.StateRecovery` chooses the checkpoint each attempt starts from.
* :mod:`.gateway`: the JobMasterGateway; :mod:`.proxy`: the same over RPC.
"""
