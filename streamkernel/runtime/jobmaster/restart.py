"""Restart strategies as the JobMaster consults them: "restart after a delay" or "give up".

Flink's scheduler asks a ``RestartBackoffTimeStrategy`` after every failure: it is told of
the failure (:meth:`RestartStrategy.notify_failure`), then says whether the job may restart
(:meth:`RestartStrategy.can_restart`) and after how long
(:meth:`RestartStrategy.get_backoff_time_ms`). The JobMaster's state machine depends on
this interface only.

The strategies are pure: they never read a clock. The time of each failure comes with
:meth:`~RestartStrategy.notify_failure` (``now_ms``), and ``can_restart`` /
``get_backoff_time_ms`` answer as of that moment, which is when Flink asks them too (right
after the failure). The backoff therefore counts from the failure, as in Flink's
DefaultScheduler: the restart happens once the backoff elapsed *and* every task of the old
attempt stopped. Exponential delay draws its jitter from a ``random.Random`` that tests
may pass in.

Which strategy a job gets (:func:`create_restart_strategy`): the ``restart-strategy.*``
keys of its configuration (the job's own keys over the cluster's); without a
``restart-strategy.type``, Flink 2.x's default, which depends on checkpointing: "none"
when it is disabled, "exponential-delay" with its default options when
``execution.checkpointing.interval`` is set.
"""

from __future__ import annotations

import abc
import math
import random
from collections import deque
from typing import Any, Mapping, Optional

from streamkernel.common.options import CheckpointingOptions
from streamkernel.common.restart_strategy import (
    RestartStrategies,
    RestartStrategyConfiguration,
    restart_strategy_from_configuration,
)

__all__ = [
    "RestartStrategy",
    "NoRestartStrategy",
    "FixedDelayRestartStrategy",
    "FailureRateRestartStrategy",
    "ExponentialDelayRestartStrategy",
    "create_restart_strategy",
    "restart_strategy_for",
    "checkpointing_enabled",
]

_LONG_MAX = 2**63 - 1  # Java's Long.MAX_VALUE: where Flink's (long) casts saturate


class RestartStrategy(abc.ABC):
    """Decides, after each failure of a job, whether and when the job restarts.

    One instance per job; it may keep history (failure counts, rates, the current backoff).
    The JobMaster calls, for each failure that starts a failover, ``notify_failure`` then
    ``can_restart`` and, if it may, ``get_backoff_time_ms``, all at the failure's time.
    """

    @abc.abstractmethod
    def notify_failure(self, cause: BaseException, now_ms: int) -> Optional[bool]:
        """A failure happened at ``now_ms`` (called before :meth:`can_restart`).

        Returns False when the failure was merged into a restart already pending (Flink
        1.19+: it does not count as a new attempt); True (or None) otherwise.
        """

    @abc.abstractmethod
    def can_restart(self) -> bool:
        """True if the job should restart after the last failure; False to fail the job."""

    @abc.abstractmethod
    def get_backoff_time_ms(self) -> int:
        """How long to wait before the restart, in milliseconds from the last failure."""

    def describe(self) -> str:
        """A short description, as Flink's web interface shows it."""
        return type(self).__name__


class NoRestartStrategy(RestartStrategy):
    """Flink's NoRestartBackoffTimeStrategy: the first failure fails the job."""

    def notify_failure(self, cause: BaseException, now_ms: int) -> bool:
        """Nothing to remember: the job will not restart."""
        return True

    def can_restart(self) -> bool:
        """Never."""
        return False

    def get_backoff_time_ms(self) -> int:
        """Irrelevant: 0."""
        return 0

    def describe(self) -> str:
        """``"Restart deactivated."`` as Flink says."""
        return "Restart deactivated."


class FixedDelayRestartStrategy(RestartStrategy):
    """Flink's FixedDelayRestartBackoffTimeStrategy: at most ``restart_attempts`` restarts,
    each ``delay_ms`` after its failure; the failure after the last allowed restart fails the job.

    >>> s = FixedDelayRestartStrategy(1, 500)
    >>> _ = s.notify_failure(RuntimeError(), 0); s.can_restart(), s.get_backoff_time_ms()
    (True, 500)
    >>> _ = s.notify_failure(RuntimeError(), 900); s.can_restart()
    False
    """

    def __init__(self, restart_attempts: int, delay_ms: int) -> None:
        if restart_attempts < 0 or delay_ms < 0:
            raise ValueError(f"fixed-delay restart: attempts and delay must be >= 0, "
                             f"got {restart_attempts} and {delay_ms} ms")
        self.restart_attempts = restart_attempts
        self.delay_ms = delay_ms
        self.current_restart_attempt = 0

    def notify_failure(self, cause: BaseException, now_ms: int) -> bool:
        """Count the failure as one more restart attempt."""
        self.current_restart_attempt += 1
        return True

    def can_restart(self) -> bool:
        """While the attempts counted so far do not exceed ``restart_attempts``."""
        return self.current_restart_attempt <= self.restart_attempts

    def get_backoff_time_ms(self) -> int:
        """Always ``delay_ms``."""
        return self.delay_ms

    def describe(self) -> str:
        """Flink's description, e.g. ``"Restart with fixed delay (1 s). #3 restart attempts."``."""
        return RestartStrategies.fixed_delay_restart(self.restart_attempts, self.delay_ms).get_description()


class FailureRateRestartStrategy(RestartStrategy):
    """Flink's FailureRateRestartBackoffTimeStrategy: restart ``delay_ms`` after each failure
    as long as at most ``max_failures_per_interval`` failures fall within any
    ``failure_interval_ms``; one more failure within the interval fails the job.

    As Flink, it keeps the timestamps of the last ``max_failures_per_interval + 1``
    failures; when it holds that many, it may restart only if the oldest of them is more
    than ``failure_interval_ms`` before the latest.
    """

    def __init__(self, max_failures_per_interval: int, failure_interval_ms: int, delay_ms: int) -> None:
        if max_failures_per_interval < 1 or failure_interval_ms < 0 or delay_ms < 0:
            raise ValueError(f"failure-rate restart: needs max failures >= 1, interval >= 0 and delay >= 0, got "
                             f"{max_failures_per_interval}, {failure_interval_ms} ms and {delay_ms} ms")
        self.max_failures_per_interval = max_failures_per_interval
        self.failure_interval_ms = failure_interval_ms
        self.delay_ms = delay_ms
        self.failure_timestamps: deque[int] = deque()
        self._now_ms = 0

    def _is_full(self) -> bool:
        return len(self.failure_timestamps) > self.max_failures_per_interval

    def notify_failure(self, cause: BaseException, now_ms: int) -> bool:
        """Remember the failure's time (forgetting the oldest once the window is full)."""
        if self._is_full():
            self.failure_timestamps.popleft()
        self.failure_timestamps.append(now_ms)
        self._now_ms = now_ms
        return True

    def can_restart(self) -> bool:
        """False when more than ``max_failures_per_interval`` failures happened within the interval."""
        if not self._is_full():
            return True
        return self._now_ms - self.failure_timestamps[0] > self.failure_interval_ms

    def get_backoff_time_ms(self) -> int:
        """Always ``delay_ms``."""
        return self.delay_ms

    def describe(self) -> str:
        """Flink's description of the failure-rate strategy."""
        return RestartStrategies.failure_rate_restart(self.max_failures_per_interval, self.failure_interval_ms,
                                                      self.delay_ms).get_description()


class ExponentialDelayRestartStrategy(RestartStrategy):
    """Flink's ExponentialDelayRestartBackoffTimeStrategy, with the semantics of Flink 1.19+.

    Restart *n* (counted from 0) waits ``initial * multiplier ** n`` ms plus a jitter drawn
    uniformly from ``[-j, +j]`` where ``j = int(that * jitter_factor)``, the sum capped to
    ``[initial, max]``. Failures that come while a restart is pending (before its time)
    are merged into it. A failure more than ``reset_threshold_ms`` after the last restart
    time starts over at ``initial``. After ``attempts_before_reset`` restarts without such a
    reset the job fails (Flink's ``attempts-before-reset-backoff``, unlimited by default).
    """

    def __init__(self, initial_backoff_ms: int, max_backoff_ms: int, backoff_multiplier: float,
                 reset_backoff_threshold_ms: int, jitter_factor: float,
                 attempts_before_reset_backoff: int = 2**31 - 1, rng: Optional[random.Random] = None) -> None:
        if not 1 <= initial_backoff_ms <= max_backoff_ms:
            raise ValueError(f"exponential-delay restart: needs 1 <= initial backoff <= max backoff, got "
                             f"{initial_backoff_ms} ms and {max_backoff_ms} ms")
        if backoff_multiplier < 1 or not 0 <= jitter_factor <= 1 or attempts_before_reset_backoff < 1:
            raise ValueError(f"exponential-delay restart: needs multiplier >= 1, 0 <= jitter <= 1 and attempts >= 1, "
                             f"got {backoff_multiplier}, {jitter_factor} and {attempts_before_reset_backoff}")
        self.initial_backoff_ms = initial_backoff_ms
        self.max_backoff_ms = max_backoff_ms
        self.backoff_multiplier = backoff_multiplier
        self.reset_backoff_threshold_ms = reset_backoff_threshold_ms
        self.jitter_factor = jitter_factor
        self.attempts_before_reset_backoff = attempts_before_reset_backoff
        self._rng = rng or random.Random()
        self.current_restart_attempt = 0
        self.next_restart_timestamp: Optional[int] = None  # Flink: Integer.MIN_VALUE until a failure
        self._now_ms = 0

    def notify_failure(self, cause: BaseException, now_ms: int) -> bool:
        """Start a new attempt (or merge into the pending one); reset after a quiet period."""
        self._now_ms = now_ms
        nxt = self.next_restart_timestamp
        if nxt is not None and now_ms <= nxt:
            return False  # merged: a restart is already due later
        if nxt is None or now_ms - nxt >= self.reset_backoff_threshold_ms:
            self.current_restart_attempt = 0
        self.next_restart_timestamp = now_ms + self._actual_backoff_ms()
        self.current_restart_attempt += 1
        return True

    def _actual_backoff_ms(self) -> int:
        try:
            raw = self.initial_backoff_ms * math.pow(self.backoff_multiplier, self.current_restart_attempt)
            current = min(int(raw), _LONG_MAX)
        except OverflowError:
            current = _LONG_MAX
        jitter = 0
        if self.jitter_factor != 0:
            offset = int(current * self.jitter_factor)
            jitter = self._rng.randint(-offset, offset)
        return max(self.initial_backoff_ms, min(current + jitter, self.max_backoff_ms))

    def can_restart(self) -> bool:
        """While the attempts since the last reset do not exceed ``attempts_before_reset_backoff``."""
        return self.current_restart_attempt <= self.attempts_before_reset_backoff

    def get_backoff_time_ms(self) -> int:
        """Time from the last failure to the pending restart (0 if it is due already)."""
        if self.next_restart_timestamp is None:
            raise RuntimeError("ExponentialDelayRestartStrategy: notify_failure must be called first")
        return max(0, self.next_restart_timestamp - self._now_ms)

    def describe(self) -> str:
        """Flink's description of the exponential-delay strategy."""
        return RestartStrategies.ExponentialDelayRestartStrategyConfiguration(
            self.initial_backoff_ms, self.max_backoff_ms, self.backoff_multiplier,
            self.reset_backoff_threshold_ms, self.jitter_factor, self.attempts_before_reset_backoff,
        ).get_description()


def restart_strategy_for(configuration: RestartStrategyConfiguration,
                         rng: Optional[random.Random] = None) -> RestartStrategy:
    """The runtime strategy for a :class:`~streamkernel.common.restart_strategy.RestartStrategies`
    configuration (a fall-back configuration means "none" here: resolve it first)."""
    c = configuration
    if isinstance(c, RestartStrategies.FixedDelayRestartStrategyConfiguration):
        return FixedDelayRestartStrategy(c.restart_attempts, c.delay_ms)
    if isinstance(c, RestartStrategies.FailureRateRestartStrategyConfiguration):
        return FailureRateRestartStrategy(c.max_failure_rate, c.failure_interval_ms, c.delay_ms)
    if isinstance(c, RestartStrategies.ExponentialDelayRestartStrategyConfiguration):
        return ExponentialDelayRestartStrategy(c.initial_backoff_ms, c.max_backoff_ms, c.backoff_multiplier,
                                               c.reset_backoff_threshold_ms, c.jitter_factor,
                                               c.attempts_before_reset_backoff, rng)
    return NoRestartStrategy()


def checkpointing_enabled(configuration: Mapping[str, Any]) -> bool:
    """True when ``execution.checkpointing.interval`` is set to a positive duration."""
    interval = CheckpointingOptions.CHECKPOINTING_INTERVAL.get(configuration)
    return interval is not None and interval.to_milliseconds() > 0


def create_restart_strategy(configuration: Mapping[str, Any], rng: Optional[random.Random] = None) -> RestartStrategy:
    """The restart strategy a job's configuration (``restart-strategy.*`` keys) asks for.

    Without ``restart-strategy.type`` the default is Flink 2.x's, as its configuration
    reference states for ``restart-strategy.type`` and its "Task Failure Recovery" page
    (ops/state/task_failure_recovery): no restart when checkpointing is disabled, and
    exponential-delay with the default values of its options when it is enabled. (That
    holds since Flink 1.19; before, the default with checkpointing was fixed-delay with
    Integer.MAX_VALUE attempts.) So a job with ``execution.checkpointing.interval`` restarts
    after about 1 s, 1.5 s, 2.25 s ... (jitter 10 %, at most 1 min, reset after 1 h without
    failure, unlimited attempts), and a job without checkpointing fails on its first failure.
    """
    configured = restart_strategy_from_configuration(configuration,
                                                     checkpointing_enabled=checkpointing_enabled(configuration))
    return restart_strategy_for(configured, rng)
