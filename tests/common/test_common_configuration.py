"""Configuration, ConfigOptions and the value parsers."""

from __future__ import annotations

import copy
import datetime

import pytest

from streamkernel.common import ConfigOptions, Configuration, Duration, Time, parse_duration_ms, parse_memory_size
from streamkernel.errors import IllegalConfigurationError, InvalidProgramError


@pytest.mark.parametrize(
    "text, millis",
    [
        ("10 s", 10_000),
        ("10s", 10_000),
        ("1 min", 60_000),
        ("2 m", 120_000),
        ("500 ms", 500),
        ("3 h", 10_800_000),
        ("1 d", 86_400_000),
        ("2 hours", 7_200_000),
        ("5 SECONDS", 5_000),
        ("1500", 1500),
        ("  7 sec ", 7_000),
        ("2500 us", 2),
        ("PT10S", 10_000),
        ("PT1M30S", 90_000),
        ("P1DT1H", 90_000_000),
    ],
)
def test_parse_duration_ms_understands_flinks_notations(text, millis):
    assert parse_duration_ms(text) == millis


@pytest.mark.parametrize("bad", ["", "abc", "10 lightyears", "1.5 s", "-3 s", None, [1]])
def test_parse_duration_ms_rejects_garbage_naming_the_key(bad):
    with pytest.raises(IllegalConfigurationError, match="my.key"):
        parse_duration_ms(bad, "my.key")


def test_parse_duration_ms_passes_time_values_through():
    assert parse_duration_ms(Duration.of_seconds(3)) == 3000
    assert parse_duration_ms(datetime.timedelta(milliseconds=20)) == 20
    assert parse_duration_ms(7) == 7


def test_parse_memory_size_is_binary():
    assert parse_memory_size("64 mb") == 64 * 1024 * 1024
    assert parse_memory_size("1g") == 1 << 30
    assert parse_memory_size("512 KB") == 512 * 1024
    assert parse_memory_size("100") == 100
    with pytest.raises(IllegalConfigurationError, match="taskmanager.memory"):
        parse_memory_size("lots", "taskmanager.memory")


def test_values_are_stored_as_text_and_typed_getters_parse_them():
    conf = Configuration()
    conf.set_integer("parallelism.default", 4).set_boolean("pipeline.object-reuse", True).set_float("f", 0.5)
    assert conf.to_dict() == {"parallelism.default": "4", "pipeline.object-reuse": "true", "f": "0.5"}
    assert conf.get_integer("parallelism.default", 1) == 4
    assert conf.get_boolean("pipeline.object-reuse", False) is True
    assert conf.get_float("f", 0.0) == 0.5
    assert conf.get_string("parallelism.default", "x") == "4"
    conf.set_string("b", "TRUE")
    assert conf.get_boolean("b", False) is True


def test_getters_return_the_default_only_when_unset():
    conf = Configuration().set_string("zero", "0")
    assert conf.get_integer("zero", 7) == 0
    assert conf.get_integer("missing", 7) == 7
    assert conf.get_string("missing", "d") == "d"
    assert conf.get_boolean("missing", True) is True


@pytest.mark.parametrize(
    "getter, text",
    [("get_integer", "four"), ("get_boolean", "yes"), ("get_float", "x1"), ("get_bytearray", "not base64!")],
)
def test_wrong_value_type_names_key_and_value(getter, text):
    conf = Configuration().set_string("some.key", text)
    with pytest.raises(IllegalConfigurationError) as info:
        getattr(conf, getter)("some.key", None)
    assert "some.key" in str(info.value) and repr(text) in str(info.value)


def test_setters_reject_wrong_python_types():
    conf = Configuration()
    with pytest.raises(IllegalConfigurationError, match="k"):
        conf.set_string("k", 3)  # type: ignore[arg-type]
    with pytest.raises(IllegalConfigurationError):
        conf.set_integer("k", True)
    with pytest.raises(IllegalConfigurationError):
        conf.set_boolean("k", "true")  # type: ignore[arg-type]
    assert "k" not in conf


def test_bytearray_round_trip():
    conf = Configuration().set_bytearray("bytes", bytearray(b"\x00\xffabc"))
    assert conf.get_bytearray("bytes", None) == bytearray(b"\x00\xffabc")
    assert isinstance(conf.to_dict()["bytes"], str)


def test_key_set_contains_remove_and_add_all_with_prefix():
    conf = Configuration().set_string("a", "1").set_string("b", "2")
    other = Configuration(conf)
    other.set_string("c", "3")
    assert conf.key_set() == {"a", "b"}  # copy is independent
    target = Configuration().add_all(other, "p.")
    assert target.key_set() == {"p.a", "p.b", "p.c"}
    assert target.contains_key("p.c") and not target.contains_key("c")
    assert target.remove_config("p.a") is True
    assert target.remove_config("p.a") is False
    d = {"x": "y"}
    conf.add_all_to_dict(d)
    assert d == {"x": "y", "a": "1", "b": "2"}


def test_from_dict_writes_values_as_flink_text_and_configuration_is_a_mapping():
    conf = Configuration.from_dict({"n": 3, "on": False, "t": Duration.of_seconds(10), "s": "v"})
    assert dict(conf) == {"n": "3", "on": "false", "t": "10 s", "s": "v"}
    assert conf["t"] == "10 s" and len(conf) == 4 and "n" in conf


def test_get_with_typed_default_and_set_with_python_values():
    conf = Configuration().set("interval", Duration.of_minutes(2)).set("flag", True).set("list", ["a", "b"])
    assert conf.get_string("interval") == "2 min"
    assert conf.get("interval", Duration.of_millis(0)) == Duration.of_minutes(2)
    assert conf.get("interval", Time.milliseconds(0)) == Time.minutes(2)
    assert conf.get("interval", datetime.timedelta(0)) == datetime.timedelta(minutes=2)
    assert conf.get("flag", False) is True
    assert conf.get("missing", 5) == 5
    assert conf.get("flag") == "true"
    assert Configuration.parse_list_value(conf.get("list")) == ["a", "b"]


def test_parse_list_value_supports_legacy_and_yaml_lists():
    assert Configuration.parse_list_value("a.jar;b.jar") == ["a.jar", "b.jar"]
    assert Configuration.parse_list_value("[a.jar, 'b;c.jar', \"d, e\"]") == ["a.jar", "b;c.jar", "d, e"]
    assert Configuration.parse_list_value("[]") == []
    assert Configuration.parse_list_value("") == []


def test_config_options_declare_typed_keys():
    parallelism = ConfigOptions.key("parallelism.default").int_type().default_value(1)
    interval = ConfigOptions.key("execution.checkpointing.interval").duration_type().no_default_value()
    size = ConfigOptions.key("buffer.size").memory_type().default_value(32 * 1024)
    conf = Configuration()
    assert conf.get(parallelism) == 1
    assert conf.get(interval) is None
    conf.set(parallelism, 8).set(interval, Duration.of_seconds(30)).set(size, 1 << 20)
    assert conf.to_dict() == {
        "parallelism.default": "8",
        "execution.checkpointing.interval": "30 s",
        "buffer.size": "1 mb",
    }
    assert conf.get(parallelism) == 8
    assert conf.get(interval).to_milliseconds() == 30_000
    assert conf.get(size) == 1 << 20
    conf.set_string("execution.checkpointing.interval", "2 min")
    assert conf.get(interval) == Duration.of_minutes(2)


def test_config_option_rejects_values_of_the_wrong_type():
    flag = ConfigOptions.key("flag").boolean_type().default_value(False)
    with pytest.raises(IllegalConfigurationError, match="flag"):
        Configuration().set(flag, "yes")
    with pytest.raises(InvalidProgramError, match="count"):
        ConfigOptions.key("count").int_type().default_value("many")
    conf = Configuration().set_string("flag", "maybe")
    with pytest.raises(IllegalConfigurationError, match="maybe"):
        conf.get(flag)


def test_config_option_reads_deprecated_keys():
    option = ConfigOptions.key("restart-strategy.type").string_type().no_default_value()
    option = option.with_deprecated_keys("restart-strategy")
    conf = Configuration().set_string("restart-strategy", "fixed-delay")
    assert conf.get(option) == "fixed-delay"
    conf.set_string("restart-strategy.type", "none")
    assert conf.get(option) == "none"
    assert conf.remove_config(option) is True and len(conf) == 0


def test_copy_equality_and_str():
    conf = Configuration().set_string("a", "1")
    clone = copy.deepcopy(conf)
    assert clone == conf and clone is not conf
    clone.set_string("a", "2")
    assert conf.get_string("a") == "1"
    assert str(conf) == "{a=1}"
    assert hash(Configuration(conf)) == hash(conf)
