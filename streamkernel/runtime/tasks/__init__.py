"""Stream tasks: what runs one subtask in a slot (Flink's ``streaming.runtime.tasks``).

* :mod:`.task`: the :class:`~.task.Task`, one subtask's lifecycle and loops.
* :mod:`.task_input`: reading the input gates; :mod:`.barriers`: aligning checkpoint barriers;
  :mod:`.task_checkpoint`: snapshotting and restoring the operator chain.
* :mod:`.chain`: the operator chain (operators fused into one task) and its outputs;
  :mod:`.typed_output`: outputs that check declared types; :mod:`.peek`: ``%flink peek``.
"""
