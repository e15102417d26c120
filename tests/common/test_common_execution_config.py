"""ExecutionConfig: defaults, validation and Flink configuration keys."""

from __future__ import annotations

import pytest

from streamkernel.common import Configuration, ExecutionConfig, RestartStrategies
from streamkernel.errors import InvalidProgramError


def test_defaults_are_flinks():
    config = ExecutionConfig()
    assert config.get_parallelism() == ExecutionConfig.PARALLELISM_DEFAULT == -1
    assert config.get_max_parallelism() == -1
    assert config.get_auto_watermark_interval() == 200
    assert config.get_latency_tracking_interval() == 0
    assert config.get_task_cancellation_interval() == 30_000
    assert config.get_task_cancellation_timeout() == 180_000
    assert not config.is_object_reuse_enabled()
    assert config.is_closure_cleaner_enabled()
    assert not config.has_generic_types_disabled()
    assert config.has_auto_generated_uids_enabled()
    assert config.get_global_job_parameters() == {}
    assert config.to_configuration() == {}


def test_setters_chain_and_change_the_getters():
    config = (ExecutionConfig().set_parallelism(4).set_max_parallelism(256).set_auto_watermark_interval(50)
              .enable_object_reuse().set_latency_tracking_interval(1000).disable_closure_cleaner())
    assert config.get_parallelism() == 4 and config.get_max_parallelism() == 256
    assert config.get_auto_watermark_interval() == 50 and config.is_object_reuse_enabled()
    assert config.get_latency_tracking_interval() == 1000 and not config.is_closure_cleaner_enabled()
    config.set_parallelism(ExecutionConfig.PARALLELISM_DEFAULT)
    assert config.get_parallelism() == -1
    config.disable_generic_types()
    config.disable_auto_generated_uids()
    assert config.has_generic_types_disabled() and not config.has_auto_generated_uids_enabled()


@pytest.mark.parametrize(
    "call, argument",
    [
        (lambda c: c.set_parallelism(0), "parallelism"),
        (lambda c: c.set_parallelism(2.0), "parallelism"),
        (lambda c: c.set_max_parallelism(40_000), "max_parallelism"),
        (lambda c: c.set_auto_watermark_interval(-1), "interval"),
        (lambda c: c.set_task_cancellation_timeout(-5), "timeout"),
        (lambda c: c.set_global_job_parameters(["a"]), "set_global_job_parameters"),
        (lambda c: c.set_restart_strategy("fixed-delay"), "set_restart_strategy"),
    ],
)
def test_misuse_names_the_argument(call, argument):
    with pytest.raises(InvalidProgramError, match=argument):
        call(ExecutionConfig())


def test_global_job_parameters_are_stored_as_text_copies():
    config = ExecutionConfig()
    config.set_global_job_parameters({"threshold": 3, "name": "x"})
    params = config.get_global_job_parameters()
    params["threshold"] = "changed"
    assert config.get_global_job_parameters() == {"threshold": "3", "name": "x"}


def test_configuration_round_trip():
    config = ExecutionConfig().set_parallelism(3).set_auto_watermark_interval(1000).enable_object_reuse()
    config.set_global_job_parameters({"a": "1", "b": "2"})
    config.set_restart_strategy(RestartStrategies.fixed_delay_restart(2, 500))
    conf = config.to_configuration()
    assert conf["parallelism.default"] == "3"
    assert conf["pipeline.auto-watermark-interval"] == "1 s"
    assert conf["pipeline.object-reuse"] == "true"
    assert conf["restart-strategy.type"] == "fixed-delay"
    rebuilt = ExecutionConfig(Configuration(conf))
    assert rebuilt.get_parallelism() == 3 and rebuilt.get_auto_watermark_interval() == 1000
    assert rebuilt.is_object_reuse_enabled()
    assert rebuilt.get_global_job_parameters() == {"a": "1", "b": "2"}


def test_reads_flink_keys_in_flink_notation():
    config = ExecutionConfig({
        "pipeline.auto-watermark-interval": "2 s",
        "metrics.latency.interval": "PT1M",
        "pipeline.closure-cleaner-level": "none",
        "pipeline.max-parallelism": "64",
    })
    assert config.get_auto_watermark_interval() == 2000
    assert config.get_latency_tracking_interval() == 60_000
    assert not config.is_closure_cleaner_enabled()
    assert config.get_max_parallelism() == 64


def test_jvm_only_registries_are_empty():
    config = ExecutionConfig()
    assert config.get_registered_kryo_types() == [] and config.get_registered_pojo_types() == []
    assert config.get_default_kryo_serializer_classes() == {}
