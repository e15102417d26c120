"""Flink's REST JSON bodies built from published snapshots: pure functions, no HTTP.

* :mod:`.ids`: Flink's ids (JobID, JobVertexID) and the one mapping of vertices to ids.
* :mod:`.io_metrics`: a subtask's live or final metrics, as Flink's IO metrics and metric ids.
* :mod:`.jobs`, :mod:`.vertices`, :mod:`.checkpoints`, :mod:`.cluster`: one resource family each.
"""
