"""RestartStrategies and their Flink 2 configuration keys."""

from __future__ import annotations

from datetime import timedelta

import pytest

from streamkernel.common import Configuration, Duration, RestartStrategies, restart_strategy_from_configuration
from streamkernel.errors import IllegalConfigurationError, InvalidProgramError


def test_fixed_delay_accepts_millis_timedelta_and_duration():
    by_ms = RestartStrategies.fixed_delay_restart(3, 10_000)
    assert by_ms == RestartStrategies.fixed_delay_restart(3, timedelta(seconds=10))
    assert by_ms == RestartStrategies.fixed_delay_restart(3, Duration.of_seconds(10))
    assert by_ms != RestartStrategies.fixed_delay_restart(4, 10_000)
    assert by_ms.get_restart_attempts() == 3
    assert by_ms.get_delay_between_attempts_interval() == timedelta(seconds=10)
    assert by_ms.get_description() == "Restart with fixed delay (10 s). #3 restart attempts."


def test_failure_rate_getters_and_description():
    conf = RestartStrategies.failure_rate_restart(2, timedelta(minutes=5), 1500)
    assert conf.get_max_failure_rate() == 2
    assert conf.get_failure_interval() == timedelta(minutes=5)
    assert conf.get_delay_between_attempts_interval() == timedelta(milliseconds=1500)
    assert "maximum of 2 failures within interval 5 min" in conf.get_description()


def test_descriptions_of_the_simple_strategies():
    assert RestartStrategies.no_restart().get_description() == "Restart deactivated."
    assert RestartStrategies.fall_back_restart().get_description() == "Cluster level default restart strategy"
    assert RestartStrategies.no_restart() == RestartStrategies.no_restart()
    assert RestartStrategies.no_restart() != RestartStrategies.fall_back_restart()


@pytest.mark.parametrize(
    "strategy",
    [
        RestartStrategies.no_restart(),
        RestartStrategies.fixed_delay_restart(5, 2500),
        RestartStrategies.failure_rate_restart(3, 120_000, 7000),
        RestartStrategies.exponential_delay_restart(500, 30_000, 2.0, 600_000, 0.25),
    ],
)
def test_configuration_round_trip(strategy):
    conf = strategy.to_configuration()
    assert all(isinstance(v, str) for v in conf.values())
    assert restart_strategy_from_configuration(conf) == strategy
    assert restart_strategy_from_configuration(Configuration(conf)) == strategy


def test_to_configuration_uses_flinks_keys():
    assert RestartStrategies.failure_rate_restart(3, 60_000, 1000).to_configuration() == {
        "restart-strategy.type": "failure-rate",
        "restart-strategy.failure-rate.max-failures-per-interval": "3",
        "restart-strategy.failure-rate.failure-rate-interval": "1 min",
        "restart-strategy.failure-rate.delay": "1 s",
    }
    assert RestartStrategies.fall_back_restart().to_configuration() == {}


@pytest.mark.parametrize("name", ["none", "off", "disable", "NONE"])
def test_no_restart_aliases(name):
    assert restart_strategy_from_configuration({"restart-strategy.type": name}) == RestartStrategies.no_restart()


@pytest.mark.parametrize("name", ["fixed-delay", "fixeddelay"])
def test_fixed_delay_defaults_are_flinks(name):
    conf = restart_strategy_from_configuration({"restart-strategy.type": name})
    assert conf == RestartStrategies.fixed_delay_restart(1, 1000)


@pytest.mark.parametrize("name", ["failure-rate", "failurerate"])
def test_failure_rate_defaults_are_flinks(name):
    conf = restart_strategy_from_configuration({"restart-strategy.type": name})
    assert conf == RestartStrategies.failure_rate_restart(1, 60_000, 1000)


@pytest.mark.parametrize("name", ["exponential-delay", "exponentialdelay"])
def test_exponential_delay_defaults_are_flinks(name):
    conf = restart_strategy_from_configuration({"restart-strategy.type": name})
    assert (conf.initial_backoff_ms, conf.max_backoff_ms, conf.backoff_multiplier) == (1000, 60_000, 1.5)
    assert (conf.reset_backoff_threshold_ms, conf.jitter_factor) == (3_600_000, 0.1)
    assert conf.attempts_before_reset_backoff == 2**31 - 1


def test_option_values_are_parsed_in_flink_notation():
    conf = restart_strategy_from_configuration({
        "restart-strategy.type": "exponential-delay",
        "restart-strategy.exponential-delay.initial-backoff": "2 s",
        "restart-strategy.exponential-delay.max-backoff": "PT5M",
        "restart-strategy.exponential-delay.backoff-multiplier": "3",
        "restart-strategy.exponential-delay.attempts-before-reset-backoff": "4",
    })
    assert (conf.initial_backoff_ms, conf.max_backoff_ms, conf.backoff_multiplier) == (2000, 300_000, 3.0)
    assert conf.attempts_before_reset_backoff == 4
    assert conf.get_max_backoff() == timedelta(minutes=5)


def test_missing_type_follows_flinks_checkpointing_rule_and_deprecated_key():
    assert restart_strategy_from_configuration({}) == RestartStrategies.no_restart()
    with_checkpoints = restart_strategy_from_configuration({}, checkpointing_enabled=True)
    assert type(with_checkpoints).__name__ == "ExponentialDelayRestartStrategyConfiguration"
    legacy = restart_strategy_from_configuration({"restart-strategy": "fixed-delay",
                                                   "restart-strategy.fixed-delay.attempts": "7"})
    assert legacy.get_restart_attempts() == 7


def test_unknown_type_lists_the_valid_ones():
    with pytest.raises(IllegalConfigurationError) as info:
        restart_strategy_from_configuration({"restart-strategy.type": "sometimes"})
    message = str(info.value)
    assert "sometimes" in message
    for valid in ("none", "off", "disable", "fixed-delay", "failure-rate", "exponential-delay"):
        assert valid in message


def test_bad_option_values_name_the_key():
    with pytest.raises(IllegalConfigurationError, match="restart-strategy.fixed-delay.delay"):
        restart_strategy_from_configuration({"restart-strategy.type": "fixed-delay",
                                             "restart-strategy.fixed-delay.delay": "soon"})
    with pytest.raises(IllegalConfigurationError, match="jitter"):
        restart_strategy_from_configuration({"restart-strategy.type": "exponential-delay",
                                             "restart-strategy.exponential-delay.jitter-factor": "2"})


def test_factories_reject_bad_arguments():
    with pytest.raises(InvalidProgramError, match="restart_attempts"):
        RestartStrategies.fixed_delay_restart(-1, 1000)
    with pytest.raises(InvalidProgramError, match="delay_between_attempts"):
        RestartStrategies.fixed_delay_restart(1, "1 s")
    with pytest.raises(InvalidProgramError, match="failure_rate"):
        RestartStrategies.failure_rate_restart(0, 1000, 1000)
    with pytest.raises(InvalidProgramError, match="max_backoff"):
        RestartStrategies.exponential_delay_restart(10_000, 1000, 2.0, 1000, 0.1)
