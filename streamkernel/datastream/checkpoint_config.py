"""CheckpointConfig: every checkpointing setting of a job, as ``pyflink.datastream.checkpoint_config``.

Obtained with ``env.get_checkpoint_config()``; checkpointing itself is switched on with
``env.enable_checkpointing(interval)``. Values are validated as Flink validates them, and
the whole configuration round-trips through Flink 2.x configuration keys
(:meth:`CheckpointConfig.to_configuration` / :meth:`CheckpointConfig.apply_configuration`)::

    config = env.get_checkpoint_config()
    config.set_checkpoint_timeout(60_000)
    config.set_externalized_checkpoint_retention(ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION)
    config.set_checkpoint_storage_dir("file:///tmp/checkpoints")
"""

from __future__ import annotations

import copy
import os
from typing import Any, Dict, Mapping, Optional, Union

from streamkernel.common.time import Duration
from streamkernel.common.time import to_millis
from streamkernel.datastream.checkpoint_storage import CheckpointStorage, FileSystemCheckpointStorage
from streamkernel.datastream.checkpointing_mode import CheckpointingMode
from streamkernel.datastream.checkpointing_options import (
    apply_checkpointing_options,
    checkpoint_config_to_configuration,
)
from streamkernel.datastream.externalized_checkpoint_retention import ExternalizedCheckpointRetention
from streamkernel.errors import InvalidProgramError

__all__ = ["CheckpointConfig", "ExternalizedCheckpointRetention", "ExternalizedCheckpointCleanup"]

ExternalizedCheckpointCleanup = ExternalizedCheckpointRetention
"""PyFlink 1.x name of :class:`ExternalizedCheckpointRetention`."""

def _int_arg(value: Any, argument: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidProgramError(f"{argument} must be an int, got {type(value).__name__} {value!r}")
    return value


def _bool_arg(value: Any, argument: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidProgramError(f"{argument} must be True or False, got {value!r}")
    return value


class CheckpointConfig:
    """All checkpointing settings: interval, mode, timeout, pauses, concurrency, failures,
    externalized retention, unaligned checkpoints and the checkpoint storage.

    Defaults (Flink's): disabled (interval -1), EXACTLY_ONCE, timeout 10 min, no minimum
    pause, one concurrent checkpoint, no tolerated failures, no externalized checkpoints,
    aligned checkpoints.
    """

    DEFAULT_MODE = CheckpointingMode.EXACTLY_ONCE
    """The default checkpointing mode: exactly once."""
    DEFAULT_TIMEOUT = 10 * 60 * 1000
    """The default timeout of a checkpoint attempt: 10 minutes (ms)."""
    DEFAULT_MIN_PAUSE_BETWEEN_CHECKPOINTS = 0
    """The default minimum pause between checkpoints: none."""
    DEFAULT_MAX_CONCURRENT_CHECKPOINTS = 1
    """The default limit of concurrently running checkpoints: one."""
    MINIMAL_CHECKPOINT_TIME = 10
    """The smallest allowed interval and timeout (ms)."""
    UNLIMITED_TOLERABLE_FAILURE_NUMBER = 2**31 - 1
    """``set_fail_on_checkpointing_errors(False)`` tolerates this many failures."""

    def __init__(self) -> None:
        self._interval = -1
        self._mode = self.DEFAULT_MODE
        self._timeout = self.DEFAULT_TIMEOUT
        self._min_pause = self.DEFAULT_MIN_PAUSE_BETWEEN_CHECKPOINTS
        self._max_concurrent = self.DEFAULT_MAX_CONCURRENT_CHECKPOINTS
        self._tolerable_failures = 0
        self._retention = ExternalizedCheckpointRetention.NO_EXTERNALIZED_CHECKPOINTS
        self._unaligned = False
        self._force_unaligned = False
        self._aligned_timeout = 0
        self._storage: Optional[CheckpointStorage] = None

    # ------------------------------------------------------------ interval and mode
    def is_checkpointing_enabled(self) -> bool:
        """Whether checkpoints are taken periodically (an interval is set)."""
        return self._interval > 0

    def disable_checkpointing(self) -> "CheckpointConfig":
        """Switch periodic checkpoints off (Flink's ``disableCheckpointing``)."""
        self._interval = -1
        return self

    def get_checkpointing_mode(self) -> CheckpointingMode:
        """EXACTLY_ONCE or AT_LEAST_ONCE."""
        return self._mode

    def set_checkpointing_mode(self, checkpointing_mode: CheckpointingMode) -> "CheckpointConfig":
        """Set the consistency guarantee (``CheckpointingMode.EXACTLY_ONCE`` or ``AT_LEAST_ONCE``)."""
        if not isinstance(checkpointing_mode, CheckpointingMode):
            raise InvalidProgramError(
                "set_checkpointing_mode: checkpointing_mode must be CheckpointingMode.EXACTLY_ONCE "
                f"or CheckpointingMode.AT_LEAST_ONCE, got {checkpointing_mode!r}"
            )
        self._mode = checkpointing_mode
        return self

    def get_checkpoint_interval(self) -> int:
        """The interval between checkpoints in ms, or -1 when checkpointing is disabled."""
        return self._interval

    def set_checkpoint_interval(self, checkpoint_interval: int) -> "CheckpointConfig":
        """Take a checkpoint every ``checkpoint_interval`` ms (at least 10 ms)."""
        millis = to_millis(checkpoint_interval, "set_checkpoint_interval: checkpoint_interval")
        if millis < self.MINIMAL_CHECKPOINT_TIME:
            raise InvalidProgramError(
                "set_checkpoint_interval: checkpoint_interval must be larger than or equal to "
                f"{self.MINIMAL_CHECKPOINT_TIME} ms, got {millis} ms"
            )
        self._interval = millis
        return self

    # ------------------------------------------------------------ timing limits
    def get_checkpoint_timeout(self) -> int:
        """How long (ms) a checkpoint may take before it is discarded."""
        return self._timeout

    def set_checkpoint_timeout(self, checkpoint_timeout: int) -> "CheckpointConfig":
        """Discard checkpoints that take longer than ``checkpoint_timeout`` ms (at least 10 ms)."""
        millis = to_millis(checkpoint_timeout, "set_checkpoint_timeout: checkpoint_timeout")
        if millis < self.MINIMAL_CHECKPOINT_TIME:
            raise InvalidProgramError(
                "set_checkpoint_timeout: checkpoint_timeout must be larger than or equal to "
                f"{self.MINIMAL_CHECKPOINT_TIME} ms, got {millis} ms"
            )
        self._timeout = millis
        return self

    def get_min_pause_between_checkpoints(self) -> int:
        """The minimal pause (ms) between the end of one checkpoint and the start of the next."""
        return self._min_pause

    def set_min_pause_between_checkpoints(self, min_pause_between_checkpoints: int) -> "CheckpointConfig":
        """Wait at least this many ms after a checkpoint before triggering the next (>= 0)."""
        millis = to_millis(
            min_pause_between_checkpoints,
            "set_min_pause_between_checkpoints: min_pause_between_checkpoints",
        )
        if millis < 0:
            raise InvalidProgramError(
                "set_min_pause_between_checkpoints: pause value must be zero or positive, "
                f"got {millis} ms"
            )
        self._min_pause = millis
        return self

    def get_max_concurrent_checkpoints(self) -> int:
        """How many checkpoints may be in progress at the same time."""
        return self._max_concurrent

    def set_max_concurrent_checkpoints(self, max_concurrent_checkpoints: int) -> "CheckpointConfig":
        """Allow this many checkpoints in flight at once (at least one)."""
        value = _int_arg(max_concurrent_checkpoints,
                         "set_max_concurrent_checkpoints: max_concurrent_checkpoints")
        if value < 1:
            raise InvalidProgramError(
                "set_max_concurrent_checkpoints: the maximum number of concurrent attempts must "
                f"be at least one, got {value}"
            )
        self._max_concurrent = value
        return self

    # ------------------------------------------------------------ failures
    def is_fail_on_checkpointing_errors(self) -> bool:
        """Deprecated: True if no checkpoint failure is tolerated."""
        return self._tolerable_failures == 0

    def set_fail_on_checkpointing_errors(self, fail_on_checkpointing_errors: bool) -> "CheckpointConfig":
        """Deprecated: True tolerates no failure, False tolerates unlimited failures."""
        fail = _bool_arg(fail_on_checkpointing_errors,
                         "set_fail_on_checkpointing_errors: fail_on_checkpointing_errors")
        return self.set_tolerable_checkpoint_failure_number(
            0 if fail else self.UNLIMITED_TOLERABLE_FAILURE_NUMBER
        )

    def get_tolerable_checkpoint_failure_number(self) -> int:
        """How many consecutive checkpoint failures are tolerated before the job fails over."""
        return self._tolerable_failures

    def set_tolerable_checkpoint_failure_number(
        self, tolerable_checkpoint_failure_number: int
    ) -> "CheckpointConfig":
        """Tolerate this many consecutive checkpoint failures (>= 0; default 0)."""
        value = _int_arg(tolerable_checkpoint_failure_number,
                         "set_tolerable_checkpoint_failure_number: tolerable_checkpoint_failure_number")
        if value < 0:
            raise InvalidProgramError(
                "set_tolerable_checkpoint_failure_number: the tolerable failure checkpoint "
                f"number must be non-negative, got {value}"
            )
        self._tolerable_failures = value
        return self

    # ------------------------------------------------------------ externalized checkpoints
    def set_externalized_checkpoint_retention(
        self, retention_mode: ExternalizedCheckpointRetention
    ) -> "CheckpointConfig":
        """Keep completed checkpoints after the job ends (on failure, and on cancel if RETAIN)."""
        if not isinstance(retention_mode, ExternalizedCheckpointRetention):
            raise InvalidProgramError(
                "set_externalized_checkpoint_retention: retention_mode must be an "
                f"ExternalizedCheckpointRetention member, got {retention_mode!r}"
            )
        self._retention = retention_mode
        return self

    def get_externalized_checkpoint_retention(self) -> ExternalizedCheckpointRetention:
        """The retention of completed checkpoints (default NO_EXTERNALIZED_CHECKPOINTS)."""
        return self._retention

    def enable_externalized_checkpoints(
        self, cleanup_mode: ExternalizedCheckpointRetention
    ) -> "CheckpointConfig":
        """PyFlink 1.x name of :meth:`set_externalized_checkpoint_retention`."""
        return self.set_externalized_checkpoint_retention(cleanup_mode)

    def get_externalized_checkpoint_cleanup(self) -> ExternalizedCheckpointRetention:
        """PyFlink 1.x name of :meth:`get_externalized_checkpoint_retention`."""
        return self._retention

    def is_externalized_checkpoints_enabled(self) -> bool:
        """Whether completed checkpoints outlive the job."""
        return self._retention is not ExternalizedCheckpointRetention.NO_EXTERNALIZED_CHECKPOINTS

    # ------------------------------------------------------------ unaligned checkpoints
    def is_unaligned_checkpoints_enabled(self) -> bool:
        """Whether barriers may overtake buffered records (only used in EXACTLY_ONCE mode)."""
        return self._unaligned

    def enable_unaligned_checkpoints(self, enabled: bool = True) -> "CheckpointConfig":
        """Let barriers overtake in-flight records, which are then stored in the checkpoint.

        Checkpoints stay fast under backpressure. Only effective in EXACTLY_ONCE mode, for
        checkpoints (savepoints stay aligned), on the local backend (the ``process`` and
        ``spark`` backends refuse such a job at submission).
        """
        self._unaligned = _bool_arg(enabled, "enable_unaligned_checkpoints: enabled")
        return self

    def disable_unaligned_checkpoints(self) -> "CheckpointConfig":
        """Use aligned checkpoints (the default)."""
        self._unaligned = False
        return self

    def set_aligned_checkpoint_timeout(self, alignment_timeout: Union[Duration, int]) -> "CheckpointConfig":
        """With unaligned checkpoints on: start aligned and switch to unaligned once this long
        passed since the checkpoint was triggered (Flink's aligned checkpoint timeout).

        0 (the default) starts every checkpoint unaligned.
        """
        millis = to_millis(alignment_timeout, "set_aligned_checkpoint_timeout: alignment_timeout")
        if millis < 0:
            raise InvalidProgramError(
                f"set_aligned_checkpoint_timeout: alignment_timeout must not be negative, got {millis} ms"
            )
        self._aligned_timeout = millis
        return self

    def get_aligned_checkpoint_timeout(self) -> Duration:
        """The aligned checkpoint timeout as a Duration."""
        return Duration.of_millis(self._aligned_timeout)

    def set_alignment_timeout(self, alignment_timeout: Union[Duration, int]) -> "CheckpointConfig":
        """Deprecated name of :meth:`set_aligned_checkpoint_timeout`."""
        return self.set_aligned_checkpoint_timeout(alignment_timeout)

    def get_alignment_timeout(self) -> Duration:
        """Deprecated name of :meth:`get_aligned_checkpoint_timeout`."""
        return self.get_aligned_checkpoint_timeout()

    def set_force_unaligned_checkpoints(self, force_unaligned_checkpoints: bool = True) -> "CheckpointConfig":
        """Use unaligned checkpoints even where they are normally not possible."""
        self._force_unaligned = _bool_arg(
            force_unaligned_checkpoints, "set_force_unaligned_checkpoints: force_unaligned_checkpoints"
        )
        return self

    def is_force_unaligned_checkpoints(self) -> bool:
        """Whether unaligned checkpoints are forced."""
        return self._force_unaligned

    # ------------------------------------------------------------ checkpoint storage
    def set_checkpoint_storage(self, storage: Union[CheckpointStorage, str, "os.PathLike[str]"]) -> "CheckpointConfig":
        """Where checkpoints are written: a :class:`CheckpointStorage`, or a directory path."""
        if isinstance(storage, (str, os.PathLike)):
            return self.set_checkpoint_storage_dir(storage)
        if not isinstance(storage, CheckpointStorage):
            raise InvalidProgramError(
                "set_checkpoint_storage: storage must be a CheckpointStorage (e.g. "
                "FileSystemCheckpointStorage(path)) or a directory path, "
                f"got {type(storage).__name__}"
            )
        self._storage = storage
        return self

    def set_checkpoint_storage_dir(self, checkpoint_path: Union[str, "os.PathLike[str]"]) -> "CheckpointConfig":
        """Write checkpoints below ``checkpoint_path`` (a :class:`FileSystemCheckpointStorage`)."""
        self._storage = FileSystemCheckpointStorage(checkpoint_path)
        return self

    def get_checkpoint_storage(self) -> Optional[CheckpointStorage]:
        """The configured checkpoint storage, or None (then the JobManager keeps checkpoints)."""
        return self._storage

    # ------------------------------------------------------------ configuration keys
    def to_configuration(self) -> Dict[str, str]:
        """Every setting as Flink 2.x configuration keys (the interval only when enabled).

        The keys are listed in :mod:`streamkernel.datastream.checkpointing_options`.
        """
        return checkpoint_config_to_configuration(self)

    def apply_configuration(self, conf: Mapping[str, str]) -> "CheckpointConfig":
        """Set what ``conf`` says (2.x keys, 1.x spellings accepted); absent keys stay as they are.

        An interval key switches checkpointing on; ``execution.checkpointing.dir`` sets a
        :class:`FileSystemCheckpointStorage`. All or nothing: a bad value raises
        :class:`IllegalConfigurationError` naming the key and leaves this config unchanged.
        """
        staged = copy.copy(self)
        apply_checkpointing_options(staged, conf)
        self.__dict__.update(staged.__dict__)
        return self

    def __repr__(self) -> str:
        interval = f"{self._interval} ms" if self.is_checkpointing_enabled() else "disabled"
        return (
            f"CheckpointConfig(interval={interval}, mode={self._mode.name}, "
            f"timeout={self._timeout} ms, storage={self._storage!r})"
        )
