"""What the checkpoint coordinator is told: its settings, and which subtasks a checkpoint involves."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from streamkernel.common.options import WebOptions
from streamkernel.datastream.checkpoint_config import CheckpointConfig
from streamkernel.datastream.checkpointing_mode import CheckpointingMode
from streamkernel.runtime.checkpoint.actions import SubtaskKey
from streamkernel.runtime.checkpoint.history import DEFAULT_HISTORY_SIZE

__all__ = ["CheckpointCoordinatorConfiguration", "CheckpointPlan", "HISTORY_SIZE_KEY"]

HISTORY_SIZE_KEY = WebOptions.CHECKPOINTS_HISTORY_SIZE.key()
"""Configuration key of how many recent checkpoints the statistics remember (default 10)."""


@dataclass(frozen=True)
class CheckpointCoordinatorConfiguration:
    """The coordinator's settings (Flink's ``CheckpointCoordinatorConfiguration``).

    ``interval_ms`` <= 0 means no periodic checkpoints (savepoints and manual checkpoints
    still work).
    """

    interval_ms: int = -1
    mode: CheckpointingMode = CheckpointingMode.EXACTLY_ONCE
    timeout_ms: int = CheckpointConfig.DEFAULT_TIMEOUT
    min_pause_ms: int = 0
    max_concurrent: int = 1
    tolerable_failures: int = 0
    history_size: int = DEFAULT_HISTORY_SIZE

    @property
    def is_periodic(self) -> bool:
        """Whether checkpoints are triggered periodically."""
        return self.interval_ms > 0

    @property
    def effective_max_concurrent(self) -> int:
        """The concurrency limit: 1 whenever a min pause is set (Flink's rule)."""
        return 1 if self.min_pause_ms > 0 else self.max_concurrent

    @classmethod
    def from_checkpoint_config(cls, config: CheckpointConfig, history_size: int = DEFAULT_HISTORY_SIZE
                               ) -> "CheckpointCoordinatorConfiguration":
        """The settings of a job's :class:`CheckpointConfig`."""
        return cls(
            interval_ms=config.get_checkpoint_interval(),
            mode=config.get_checkpointing_mode(),
            timeout_ms=config.get_checkpoint_timeout(),
            min_pause_ms=config.get_min_pause_between_checkpoints(),
            max_concurrent=config.get_max_concurrent_checkpoints(),
            tolerable_failures=config.get_tolerable_checkpoint_failure_number(),
            history_size=history_size,
        )

    @classmethod
    def from_configuration(cls, conf: Mapping[str, Any]) -> "CheckpointCoordinatorConfiguration":
        """The settings written as configuration keys (``execution.checkpointing.*``; 1.x
        spellings accepted), e.g. a StreamGraph's or a deployment descriptor's configuration."""
        conf = {str(k): str(v) for k, v in conf.items()}
        config = CheckpointConfig().apply_configuration(conf)
        return cls.from_checkpoint_config(config, WebOptions.CHECKPOINTS_HISTORY_SIZE.get(conf))


@dataclass(frozen=True)
class CheckpointPlan:
    """Which subtasks a checkpoint is triggered at, and which must acknowledge it (Flink's
    ``CheckpointPlan``): the source subtasks, and every subtask of the job."""

    tasks_to_trigger: tuple[SubtaskKey, ...]
    tasks_to_wait_for: tuple[SubtaskKey, ...]

    @classmethod
    def from_job_graph(cls, job_graph: Any) -> "CheckpointPlan":
        """Trigger at the subtasks of vertices without inputs; wait for every subtask."""
        with_inputs = {edge.target_vertex_id for edge in job_graph.edges}
        trigger = tuple((v.id, i) for v in job_graph.vertices if v.id not in with_inputs for i in range(v.parallelism))
        wait = tuple((v.id, i) for v in job_graph.vertices for i in range(v.parallelism))
        return cls(trigger, wait)
