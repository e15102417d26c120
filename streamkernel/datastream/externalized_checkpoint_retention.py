"""ExternalizedCheckpointRetention: what happens to checkpoints when a job ends.

As ``pyflink.datastream.externalized_checkpoint_retention`` (1.x name:
``ExternalizedCheckpointCleanup``, kept as an alias in
:mod:`streamkernel.datastream.checkpoint_config`).
"""

from __future__ import annotations

from enum import Enum

__all__ = ["ExternalizedCheckpointRetention"]


class ExternalizedCheckpointRetention(Enum):
    """Whether completed checkpoints outlive the job (key ``execution.checkpointing.externalized-checkpoint-retention``).

    - ``DELETE_ON_CANCELLATION``: checkpoints are kept when the job fails, deleted when it
      is cancelled.
    - ``RETAIN_ON_CANCELLATION``: checkpoints are kept when the job fails or is cancelled;
      delete them by hand.
    - ``NO_EXTERNALIZED_CHECKPOINTS``: checkpoints are not externalized (the default).
    """

    DELETE_ON_CANCELLATION = 0
    RETAIN_ON_CANCELLATION = 1
    NO_EXTERNALIZED_CHECKPOINTS = 2
