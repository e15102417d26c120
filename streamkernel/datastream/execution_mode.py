"""RuntimeExecutionMode: how a job runs, as ``pyflink.datastream.execution_mode``."""

from __future__ import annotations

from enum import Enum

__all__ = ["RuntimeExecutionMode"]


class RuntimeExecutionMode(Enum):
    """The runtime execution mode of a job (key ``execution.runtime-mode``, value = the name).

    - ``STREAMING``: continuous, incremental processing with watermarks and checkpoints
      (the default; works for bounded and unbounded sources).
    - ``BATCH``: for bounded inputs only (an unbounded source is refused): keyed operators read
      their input sorted by key, then by timestamp, one key at a time; there is no watermark
      but the end of each key, where its timers fire; reduce/sum emit one value per key
      (:mod:`streamkernel.runtime.operators.batch_sorting`).
    - ``AUTOMATIC``: BATCH if every source is bounded, else STREAMING.
    """

    STREAMING = 0
    BATCH = 1
    AUTOMATIC = 2
