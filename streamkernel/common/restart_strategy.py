"""Restart strategies: what the JobMaster does when a task of a running job fails.

:class:`RestartStrategies` builds PyFlink's restart strategy configurations (no restart,
fixed delay, failure rate, fall back to the cluster's default) plus exponential delay,
which Flink has but PyFlink 1.x cannot build (a streamkernel extra). Each configuration
converts to and from Flink 2's ``restart-strategy.*`` configuration keys, the form Flink 2
programs use instead of ``set_restart_strategy``.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Dict, Mapping, Union

from streamkernel.common.config_options import format_value, parse_duration_ms
from streamkernel.common.config_options import parse_float, parse_int
from streamkernel.common.time import Duration, Time, to_millis
from streamkernel.errors import IllegalConfigurationError, InvalidProgramError

__all__ = ["RestartStrategies", "RestartStrategyConfiguration", "restart_strategy_from_configuration"]

Interval = Union[int, timedelta, Duration, Time]

_TYPE_KEY = "restart-strategy.type"
_FIXED = "restart-strategy.fixed-delay."
_RATE = "restart-strategy.failure-rate."
_EXP = "restart-strategy.exponential-delay."
# Flink's RestartStrategyType: main value first, then its aliases.
_TYPE_NAMES = {
    "none": ("disable", "none", "off"),
    "fixed-delay": ("fixed-delay", "fixeddelay"),
    "failure-rate": ("failure-rate", "failurerate"),
    "exponential-delay": ("exponential-delay", "exponentialdelay"),
}
_INT_MAX = 2**31 - 1


def _ms(value: Interval, argument: str) -> int:
    millis = to_millis(value, argument)
    if millis < 0:
        raise InvalidProgramError(f"{argument} must not be negative, got {millis} ms")
    return millis


def _text(millis: int) -> str:
    return format_value(Duration.of_millis(millis))


class RestartStrategyConfiguration:
    """Abstract configuration of a restart strategy; the runtime builds the strategy from it."""

    def get_description(self) -> str:
        """A description of the strategy, as shown in the web interface."""
        raise NotImplementedError

    def to_configuration(self) -> Dict[str, str]:
        """This strategy as Flink 2 ``restart-strategy.*`` configuration keys and values."""
        raise NotImplementedError

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self.__dict__ == other.__dict__

    def __hash__(self) -> int:
        return hash((type(self).__name__, tuple(sorted(self.__dict__.items()))))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.get_description()!r})"


class RestartStrategies:
    """Factories for restart strategy configurations (PyFlink's RestartStrategies).

        >>> conf = RestartStrategies.fixed_delay_restart(3, 10000).to_configuration()
        >>> conf["restart-strategy.type"], conf["restart-strategy.fixed-delay.delay"]
        ('fixed-delay', '10 s')
    """

    class NoRestartStrategyConfiguration(RestartStrategyConfiguration):
        """No restart: the job fails on the first task failure."""

        def get_description(self) -> str:
            return "Restart deactivated."

        def to_configuration(self) -> Dict[str, str]:
            return {_TYPE_KEY: "disable"}

    class FallbackRestartStrategyConfiguration(RestartStrategyConfiguration):
        """Use the cluster's default restart strategy (its configuration decides)."""

        def get_description(self) -> str:
            return "Cluster level default restart strategy"

        def to_configuration(self) -> Dict[str, str]:
            return {}

    class FixedDelayRestartStrategyConfiguration(RestartStrategyConfiguration):
        """Restart up to ``restart_attempts`` times, waiting a fixed delay before each."""

        def __init__(self, restart_attempts: int, delay_between_attempts_interval: Interval) -> None:
            if isinstance(restart_attempts, bool) or not isinstance(restart_attempts, int) or restart_attempts < 0:
                raise InvalidProgramError(
                    f"restart_attempts must be an int >= 0, got {restart_attempts!r}"
                )
            self.restart_attempts = restart_attempts
            self.delay_ms = _ms(delay_between_attempts_interval, "delay_between_attempts")

        def get_restart_attempts(self) -> int:
            """How many restarts are allowed before the job fails."""
            return self.restart_attempts

        def get_delay_between_attempts_interval(self) -> timedelta:
            """The delay before each restart."""
            return timedelta(milliseconds=self.delay_ms)

        def get_description(self) -> str:
            return f"Restart with fixed delay ({_text(self.delay_ms)}). #{self.restart_attempts} restart attempts."

        def to_configuration(self) -> Dict[str, str]:
            return {
                _TYPE_KEY: "fixed-delay",
                _FIXED + "attempts": str(self.restart_attempts),
                _FIXED + "delay": _text(self.delay_ms),
            }

    class FailureRateRestartStrategyConfiguration(RestartStrategyConfiguration):
        """Restart after a fixed delay while there are at most ``max_failure_rate`` failures
        within any ``failure_interval``; fail the job beyond that rate."""

        def __init__(
            self, max_failure_rate: int, failure_interval: Interval, delay_between_attempts_interval: Interval
        ) -> None:
            if isinstance(max_failure_rate, bool) or not isinstance(max_failure_rate, int) or max_failure_rate < 1:
                raise InvalidProgramError(f"failure_rate must be an int >= 1, got {max_failure_rate!r}")
            self.max_failure_rate = max_failure_rate
            self.failure_interval_ms = _ms(failure_interval, "failure_interval")
            self.delay_ms = _ms(delay_between_attempts_interval, "delay_interval")

        def get_max_failure_rate(self) -> int:
            """The most failures allowed within one failure interval."""
            return self.max_failure_rate

        def get_failure_interval(self) -> timedelta:
            """The interval over which failures are counted."""
            return timedelta(milliseconds=self.failure_interval_ms)

        def get_delay_between_attempts_interval(self) -> timedelta:
            """The delay before each restart."""
            return timedelta(milliseconds=self.delay_ms)

        def get_description(self) -> str:
            return (
                f"Failure rate restart with maximum of {self.max_failure_rate} failures within "
                f"interval {_text(self.failure_interval_ms)} and fixed delay {_text(self.delay_ms)}."
            )

        def to_configuration(self) -> Dict[str, str]:
            return {
                _TYPE_KEY: "failure-rate",
                _RATE + "max-failures-per-interval": str(self.max_failure_rate),
                _RATE + "failure-rate-interval": _text(self.failure_interval_ms),
                _RATE + "delay": _text(self.delay_ms),
            }

    class ExponentialDelayRestartStrategyConfiguration(RestartStrategyConfiguration):
        """Restart with a delay that starts at ``initial_backoff`` and is multiplied by
        ``backoff_multiplier`` after each failure, up to ``max_backoff``; after
        ``reset_backoff_threshold`` without failure it starts over. ``jitter_factor`` adds
        or subtracts a random share of the delay. Flink's defaults: 1 s, 1 min, 1.5, 1 h, 0.1."""

        def __init__(
            self,
            initial_backoff: Interval = 1_000,
            max_backoff: Interval = 60_000,
            backoff_multiplier: float = 1.5,
            reset_backoff_threshold: Interval = 3_600_000,
            jitter_factor: float = 0.1,
            attempts_before_reset_backoff: int = _INT_MAX,
        ) -> None:
            self.initial_backoff_ms = _ms(initial_backoff, "initial_backoff")
            self.max_backoff_ms = _ms(max_backoff, "max_backoff")
            self.backoff_multiplier = float(backoff_multiplier)
            self.reset_backoff_threshold_ms = _ms(reset_backoff_threshold, "reset_backoff_threshold")
            self.jitter_factor = float(jitter_factor)
            self.attempts_before_reset_backoff = attempts_before_reset_backoff
            if self.initial_backoff_ms < 1 or self.max_backoff_ms < self.initial_backoff_ms:
                raise InvalidProgramError(
                    f"exponential delay needs 0 < initial_backoff <= max_backoff, got "
                    f"{self.initial_backoff_ms} ms and {self.max_backoff_ms} ms"
                )
            if self.backoff_multiplier < 1.0:
                raise InvalidProgramError(f"backoff_multiplier must be >= 1, got {backoff_multiplier}")
            if not 0.0 <= self.jitter_factor <= 1.0:
                raise InvalidProgramError(f"jitter_factor must be within [0, 1], got {jitter_factor}")
            if not isinstance(attempts_before_reset_backoff, int) or attempts_before_reset_backoff < 1:
                raise InvalidProgramError(
                    f"attempts_before_reset_backoff must be an int >= 1, got {attempts_before_reset_backoff!r}"
                )

        def get_initial_backoff(self) -> timedelta:
            """The delay before the first restart."""
            return timedelta(milliseconds=self.initial_backoff_ms)

        def get_max_backoff(self) -> timedelta:
            """The longest delay between restarts."""
            return timedelta(milliseconds=self.max_backoff_ms)

        def get_backoff_multiplier(self) -> float:
            """The factor applied to the delay after each failure."""
            return self.backoff_multiplier

        def get_reset_backoff_threshold(self) -> timedelta:
            """How long the job must run without failure for the delay to start over."""
            return timedelta(milliseconds=self.reset_backoff_threshold_ms)

        def get_jitter_factor(self) -> float:
            """The share of the delay randomly added or subtracted."""
            return self.jitter_factor

        def get_description(self) -> str:
            return (
                f"Restart with exponential delay: starting at {_text(self.initial_backoff_ms)}, "
                f"increasing by {self.backoff_multiplier}, with maximum {_text(self.max_backoff_ms)}. "
                f"Delay resets after {_text(self.reset_backoff_threshold_ms)} with jitter {self.jitter_factor}"
            )

        def to_configuration(self) -> Dict[str, str]:
            return {
                _TYPE_KEY: "exponential-delay",
                _EXP + "initial-backoff": _text(self.initial_backoff_ms),
                _EXP + "max-backoff": _text(self.max_backoff_ms),
                _EXP + "backoff-multiplier": repr(self.backoff_multiplier),
                _EXP + "reset-backoff-threshold": _text(self.reset_backoff_threshold_ms),
                _EXP + "jitter-factor": repr(self.jitter_factor),
                _EXP + "attempts-before-reset-backoff": str(self.attempts_before_reset_backoff),
            }

    @staticmethod
    def no_restart() -> "RestartStrategies.NoRestartStrategyConfiguration":
        """No restart: the job fails on the first failure."""
        return RestartStrategies.NoRestartStrategyConfiguration()

    @staticmethod
    def fall_back_restart() -> "RestartStrategies.FallbackRestartStrategyConfiguration":
        """Use the cluster's default restart strategy."""
        return RestartStrategies.FallbackRestartStrategyConfiguration()

    @staticmethod
    def fixed_delay_restart(
        restart_attempts: int, delay_between_attempts: Interval
    ) -> "RestartStrategies.FixedDelayRestartStrategyConfiguration":
        """Restart up to ``restart_attempts`` times, ``delay_between_attempts`` apart
        (milliseconds, ``timedelta`` or ``Duration``)."""
        return RestartStrategies.FixedDelayRestartStrategyConfiguration(restart_attempts, delay_between_attempts)

    @staticmethod
    def failure_rate_restart(
        failure_rate: int, failure_interval: Interval, delay_interval: Interval
    ) -> "RestartStrategies.FailureRateRestartStrategyConfiguration":
        """Restart while at most ``failure_rate`` failures happen within ``failure_interval``,
        waiting ``delay_interval`` before each restart."""
        return RestartStrategies.FailureRateRestartStrategyConfiguration(failure_rate, failure_interval, delay_interval)

    @staticmethod
    def exponential_delay_restart(
        initial_backoff: Interval,
        max_backoff: Interval,
        backoff_multiplier: float,
        reset_backoff_threshold: Interval,
        jitter_factor: float,
    ) -> "RestartStrategies.ExponentialDelayRestartStrategyConfiguration":
        """Restart with exponentially growing delays (streamkernel extra: Flink's Java API has
        it, PyFlink's does not)."""
        return RestartStrategies.ExponentialDelayRestartStrategyConfiguration(
            initial_backoff, max_backoff, backoff_multiplier, reset_backoff_threshold, jitter_factor
        )


def _canonical_type(value: str) -> str:
    lowered = value.strip().lower()
    for canonical, names in _TYPE_NAMES.items():
        if lowered in names:
            return canonical
    valid = ", ".join(name for names in _TYPE_NAMES.values() for name in names)
    raise IllegalConfigurationError(
        f"Unknown restart strategy {value!r} for key '{_TYPE_KEY}'; valid values are: {valid}"
    )


def restart_strategy_from_configuration(
    conf: Mapping[str, Any], checkpointing_enabled: bool = False
) -> RestartStrategyConfiguration:
    """The restart strategy that Flink 2 configuration keys describe.

    Reads ``restart-strategy.type`` (or the deprecated ``restart-strategy``) and the options
    of that type, with Flink's defaults for missing ones. Without a type, Flink's rule
    applies: exponential delay when checkpointing is enabled, no restart otherwise.
    ``conf`` is a :class:`~streamkernel.common.configuration.Configuration` or any mapping.

        >>> restart_strategy_from_configuration({"restart-strategy.type": "fixed-delay",
        ...     "restart-strategy.fixed-delay.attempts": "3"}).get_description()
        'Restart with fixed delay (1 s). #3 restart attempts.'
    """
    raw = conf.get(_TYPE_KEY)
    if raw is None:
        raw = conf.get("restart-strategy")
    if raw is None:
        kind = "exponential-delay" if checkpointing_enabled else "none"
    else:
        kind = _canonical_type(str(raw))

    def duration(key: str, default_ms: int) -> int:
        value = conf.get(key)
        return default_ms if value is None else parse_duration_ms(value, key)

    def integer(key: str, default: int) -> int:
        value = conf.get(key)
        return default if value is None else parse_int(value, key)

    def number(key: str, default: float) -> float:
        value = conf.get(key)
        return default if value is None else parse_float(value, key)

    try:
        if kind == "none":
            return RestartStrategies.no_restart()
        if kind == "fixed-delay":
            return RestartStrategies.fixed_delay_restart(
                integer(_FIXED + "attempts", 1), duration(_FIXED + "delay", 1_000)
            )
        if kind == "failure-rate":
            return RestartStrategies.failure_rate_restart(
                integer(_RATE + "max-failures-per-interval", 1),
                duration(_RATE + "failure-rate-interval", 60_000),
                duration(_RATE + "delay", 1_000),
            )
        return RestartStrategies.ExponentialDelayRestartStrategyConfiguration(
            duration(_EXP + "initial-backoff", 1_000),
            duration(_EXP + "max-backoff", 60_000),
            number(_EXP + "backoff-multiplier", 1.5),
            duration(_EXP + "reset-backoff-threshold", 3_600_000),
            number(_EXP + "jitter-factor", 0.1),
            integer(_EXP + "attempts-before-reset-backoff", _INT_MAX),
        )
    except InvalidProgramError as error:
        raise IllegalConfigurationError(f"Invalid {kind} restart strategy configuration: {error}") from None

