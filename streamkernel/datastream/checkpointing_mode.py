"""CheckpointingMode: the consistency guarantee of checkpoints, as ``pyflink.datastream.checkpointing_mode``."""

from __future__ import annotations

from enum import Enum

__all__ = ["CheckpointingMode"]


class CheckpointingMode(Enum):
    """The consistency guarantee checkpoints give to state.

    - ``EXACTLY_ONCE``: after a recovery, every record is reflected in state exactly once.
      Tasks with several inputs align the checkpoint barriers (buffering the inputs whose
      barrier has arrived) before they snapshot. The default.
    - ``AT_LEAST_ONCE``: barriers are not aligned, so after a recovery some records may be
      reflected twice; checkpoints cost less latency.

    The configuration value (key ``execution.checkpointing.mode``) is the member's name.
    """

    EXACTLY_ONCE = 0
    AT_LEAST_ONCE = 1
