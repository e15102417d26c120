"""Stream tasks: what runs one subtask in a slot (Flink's ``streaming.runtime.tasks``).

* :mod:`.task`: the :class:`~.task.Task`, one execution attempt's thread and lifecycle (Flink's
  ``taskmanager.Task``), running a stream task as its invokable.
* :mod:`.stream_task`: the :class:`~.stream_task.StreamTask` (restore, invoke, the work between
  batches); its loops in :mod:`.source_stream_task` and :mod:`.input_stream_task`;
  :mod:`.mailbox`: actions other threads hand to the task thread (Flink's ``TaskMailbox``).
* :mod:`.chain_setup`: building, opening and closing the operator chain; :mod:`.chain`: the
  chain itself (operators fused into one task) and its outputs; :mod:`.typed_output`: outputs
  that check declared types; :mod:`.peek`: ``%flink peek``.
* :mod:`.task_input`: reading the input gates; :mod:`.barriers`: aligning checkpoint barriers;
  :mod:`.unaligned_barriers`: unaligned checkpoints (in-flight data);
  :mod:`.task_checkpoint`: snapshotting and restoring the operator chain.
"""
