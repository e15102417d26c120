"""The option registry (streamkernel.common.options): every key declared once, typed,
described, parsed in Flink's notations and checked; docs/configuration.md generated from it."""

from __future__ import annotations

import pathlib

import pytest

from streamkernel.common import Configuration, ConfigOptions
from streamkernel.common.options import (
    CheckpointingOptions,
    ExecutionOptions,
    MetricOptions,
    RestartStrategyOptions,
    TaskManagerOptions,
    all_options,
    find_option,
    validate_configuration,
)
from streamkernel.common.options.docs import render_markdown
from streamkernel.common.time import Duration
from streamkernel.errors import IllegalConfigurationError

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def test_no_key_is_declared_twice() -> None:
    keys = [key for option in all_options() for key in (option.key(),) + option.deprecated_keys()]
    assert len(keys) == len(set(keys)), sorted(k for k in keys if keys.count(k) > 1)


@pytest.mark.parametrize("option", all_options(), ids=lambda o: o.key())
def test_every_option_has_a_type_a_default_or_none_and_a_description(option) -> None:
    assert option.type_name() in {"bool", "int", "long", "float", "double", "string", "duration", "memory", "enum"}
    assert option.description().strip(), f"{option.key()} has no description"
    assert option.expected().strip()
    if option.has_default_value():  # a declared default is itself a valid value, written back the same
        assert option.parse(option.format(option.default_value())) == option.default_value()
    else:
        assert option.get({}) is None
    assert find_option(option.key()) is option


@pytest.mark.parametrize("key, text, expected", [
    ("metrics.latency.interval", "1 s", Duration.of_seconds(1)),
    ("metrics.latency.interval", "250", Duration.of_millis(250)),
    ("execution.checkpointing.timeout", "PT10S", Duration.of_seconds(10)),
    ("heartbeat.timeout", "2 min", Duration.of_minutes(2)),
    ("slot.request.timeout", "500ms", Duration.of_millis(500)),
    ("execution.checkpointing.unaligned.enabled", "TRUE", True),
    ("pipeline.object-reuse", "false", False),
    ("execution.checkpointing.mode", "at_least_once", "AT_LEAST_ONCE"),
    ("execution.runtime-mode", "Batch", "BATCH"),
    ("restart-strategy.type", "FixedDelay", "fixeddelay"),
    ("taskmanager.numberOfTaskSlots", " 4 ", 4),
    ("restart-strategy.exponential-delay.jitter-factor", "0.25", 0.25),
    ("state.backend.type", "rocksdb", "rocksdb"),
])
def test_every_notation_of_a_valid_value_is_read(key: str, text: str, expected: object) -> None:
    validate_configuration({key: text})
    option = find_option(key)
    assert option is not None and option.get({key: text}) == expected
    assert Configuration({key: text}).get(option) == expected


def test_a_memory_size_is_read_in_flink_notation() -> None:
    option = ConfigOptions.key("x.size").memory_type().default_value(1 << 20)
    assert option.get({"x.size": "64 mb"}) == 64 << 20
    assert option.format(option.default_value()) == "1 mb"
    with pytest.raises(IllegalConfigurationError, match=r"'64 furlongs' for key 'x.size': expected a memory size"):
        option.get({"x.size": "64 furlongs"})


@pytest.mark.parametrize("key, text, expected", [
    ("metrics.latency.interval", "soon", "a duration"),
    ("metrics.latency.interval", "1 fortnight", "a duration"),
    ("taskmanager.numberOfTaskSlots", "two", "an integer"),
    ("taskmanager.numberOfTaskSlots", "0", "an integer >= 1"),
    ("execution.checkpointing.unaligned.enabled", "yes", "'true' or 'false'"),
    ("execution.checkpointing.mode", "EXACTLY_TWICE", "one of EXACTLY_ONCE, AT_LEAST_ONCE"),
    ("restart-strategy.exponential-delay.jitter-factor", "1.5", "a number >= 0 and <= 1"),
    ("restart-strategy.exponential-delay.backoff-multiplier", "fast", "a number"),
    ("heartbeat.interval", "0 ms", "a duration such as '10 s', '1 min' or '500 ms' (no unit: ms) >= 1 ms"),
    ("execution.buffer-timeout.interval", "-1", "a duration"),
])
def test_a_bad_value_names_the_key_the_value_and_what_is_expected(key: str, text: str, expected: str) -> None:
    with pytest.raises(IllegalConfigurationError) as raised:
        validate_configuration({"some.unknown.key": "anything", key: text})
    message = str(raised.value)
    assert f"key '{key}'" in message and repr(text) in message and expected in message, message
    assert "\n" not in message


def test_a_deprecated_key_is_read_and_named_in_errors() -> None:
    assert CheckpointingOptions.ENABLE_UNALIGNED.get({"execution.checkpointing.unaligned": "true"}) is True
    with pytest.raises(IllegalConfigurationError, match="key 'restart-strategy'"):
        validate_configuration({"restart-strategy": "sometimes"})


def test_unknown_keys_are_accepted() -> None:
    validate_configuration({"my.own.key": "1 s", "pipeline.nonexistent-flag": "maybe"})


def test_a_read_without_the_key_gives_the_declared_default() -> None:
    assert MetricOptions.LATENCY_INTERVAL.get({}) == Duration.of_seconds(1)
    assert ExecutionOptions.BUFFER_TIMEOUT.get({"execution.buffer-timeout": "5 ms"}) == Duration.of_millis(5)
    assert TaskManagerOptions.NUM_TASK_SLOTS.get({}, None) is None
    assert RestartStrategyOptions.EXPONENTIAL_DELAY_ATTEMPTS.get({}) == 2**31 - 1


def test_the_configuration_doc_is_generated_from_the_registry() -> None:
    assert DOC.read_text() == render_markdown(), (
        "docs/configuration.md is stale: run python -m streamkernel.common.options.docs > docs/configuration.md")
    for option in all_options():
        assert f"`{option.key()}`" in DOC.read_text()
