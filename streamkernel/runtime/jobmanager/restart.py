"""Restart strategies as the JobMaster consults them: "restart after a delay" or "give up".

Flink's scheduler asks a ``RestartBackoffTimeStrategy`` after every failure: it is told of
the failure (:meth:`RestartStrategy.notify_failure`), then says whether the job may restart
(:meth:`RestartStrategy.can_restart`) and after how long
(:meth:`RestartStrategy.get_backoff_time_ms`). The JobMaster's state machine depends on
this interface only.

Only "no restart" exists for now: a failure fails the job. Restarting needs checkpoints to
restart *from* (fault tolerance comes with the next issue), so a configured fixed-delay,
failure-rate or exponential-delay strategy currently behaves as "none", with a warning.
"""

from __future__ import annotations

import abc
import warnings
from typing import Any, Mapping

from streamkernel.common.restart_strategy import RestartStrategies, restart_strategy_from_configuration

__all__ = ["RestartStrategy", "NoRestartStrategy", "create_restart_strategy"]


class RestartStrategy(abc.ABC):
    """Decides, after each failure of a job, whether and when the job restarts.

    One instance per job; it may keep history (failure counts, rates, the current backoff).
    """

    @abc.abstractmethod
    def notify_failure(self, cause: BaseException, now_ms: int) -> None:
        """A failure happened at ``now_ms`` (called before :meth:`can_restart`)."""

    @abc.abstractmethod
    def can_restart(self) -> bool:
        """True if the job should restart after the last failure; False to fail the job."""

    @abc.abstractmethod
    def get_backoff_time_ms(self) -> int:
        """How long to wait before the restart, in milliseconds."""

    def describe(self) -> str:
        """A short description, as Flink's web interface shows it."""
        return type(self).__name__


class NoRestartStrategy(RestartStrategy):
    """Flink's NoRestartBackoffTimeStrategy: the first failure fails the job."""

    def notify_failure(self, cause: BaseException, now_ms: int) -> None:
        """Nothing to remember: the job will not restart."""

    def can_restart(self) -> bool:
        """Never."""
        return False

    def get_backoff_time_ms(self) -> int:
        """Irrelevant: 0."""
        return 0

    def describe(self) -> str:
        """``"Restart deactivated."`` as Flink says."""
        return "Restart deactivated."


def create_restart_strategy(configuration: Mapping[str, Any]) -> RestartStrategy:
    """The restart strategy a job's configuration (``restart-strategy.*`` keys) asks for.

    Every strategy other than "none" warns and falls back to :class:`NoRestartStrategy`
    until fault tolerance (checkpoints to restart from) exists.
    """
    configured = restart_strategy_from_configuration(configuration)
    if not isinstance(configured, (RestartStrategies.NoRestartStrategyConfiguration,
                                   RestartStrategies.FallbackRestartStrategyConfiguration)):
        warnings.warn(f"restart strategy {configured.get_description()!r} is not supported yet (restarts need "
                      f"checkpointing, which comes with fault tolerance); the job runs without restarts",
                      RuntimeWarning, stacklevel=2)
    return NoRestartStrategy()
