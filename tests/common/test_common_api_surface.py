"""streamkernel.common offers PyFlink 2.3's pyflink.common surface (names from pyflink-api.json).

The expected names are PyFlink's, copied from the installed package's public API; those
left out on purpose wrap JVM objects and are listed with the reason.
"""

from __future__ import annotations

import importlib

import pytest

import streamkernel.common

# pyflink.common: class -> public methods (PyFlink 2.3.0).
PYFLINK_COMMON = {
    "ByteArraySchema": [],
    "CompletableFuture": ["cancel", "cancelled", "done", "exception", "result"],
    "ConfigOption": [],
    "ConfigOptions": ["OptionBuilder", "TypedConfigOptionBuilder", "key"],
    "Configuration": [
        "add_all", "add_all_to_dict", "contains_key", "from_dict", "get_boolean", "get_bytearray",
        "get_float", "get_integer", "get_string", "key_set", "parse_list_value", "remove_config",
        "set_boolean", "set_bytearray", "set_float", "set_integer", "set_string", "to_dict",
    ],
    "DeserializationSchema": [],
    "Duration": ["of_days", "of_hours", "of_millis", "of_minutes", "of_nanos", "of_seconds"],
    "Encoder": ["simple_string_encoder"],
    "ExecutionConfig": [
        "disable_auto_generated_uids", "disable_closure_cleaner", "disable_force_avro",
        "disable_force_kryo", "disable_generic_types", "disable_object_reuse",
        "enable_auto_generated_uids", "enable_closure_cleaner", "enable_force_avro",
        "enable_force_kryo", "enable_generic_types", "enable_object_reuse",
        "get_auto_watermark_interval", "get_default_kryo_serializer_classes",
        "get_global_job_parameters", "get_latency_tracking_interval", "get_max_parallelism",
        "get_parallelism", "get_registered_kryo_types", "get_registered_pojo_types",
        "get_task_cancellation_interval", "get_task_cancellation_timeout",
        "has_auto_generated_uids_enabled", "has_generic_types_disabled", "is_closure_cleaner_enabled",
        "is_force_avro_enabled", "is_force_kryo_enabled", "is_object_reuse_enabled",
        "is_use_snapshot_compression", "set_auto_watermark_interval", "set_global_job_parameters",
        "set_latency_tracking_interval", "set_max_parallelism", "set_parallelism",
        "set_task_cancellation_interval", "set_task_cancellation_timeout", "set_use_snapshot_compression",
    ],
    "InputDependencyConstraint": [],
    "Instant": ["of_epoch_milli", "to_epoch_milli"],
    "JobClient": [
        "cancel", "get_accumulators", "get_job_execution_result", "get_job_id", "get_job_status",
        "stop_with_savepoint", "trigger_savepoint",
    ],
    "JobExecutionResult": ["get_accumulator_result", "get_all_accumulator_results", "get_job_id", "get_net_runtime"],
    "JobID": [],
    "JobStatus": ["is_globally_terminal_state", "is_terminal_state"],
    "RestartStrategies": [
        "FailureRateRestartStrategyConfiguration", "FallbackRestartStrategyConfiguration",
        "FixedDelayRestartStrategyConfiguration", "NoRestartStrategyConfiguration",
        "failure_rate_restart", "fall_back_restart", "fixed_delay_restart", "no_restart",
    ],
    "RestartStrategyConfiguration": ["get_description"],
    "Row": ["as_dict", "get_fields_by_names", "get_row_kind", "of_kind", "set_field_names", "set_row_kind"],
    "RowKind": [],
    "SerializationSchema": [],
    "SimpleStringSchema": [],
    "Time": ["days", "hours", "milliseconds", "minutes", "seconds", "to_milliseconds"],
    "TypeInformation": ["from_internal_type", "need_conversion", "to_internal_type"],
    "TypeSerializer": ["deserialize", "serialize"],
    "Types": [
        "BASIC_ARRAY", "BIG_DEC", "BIG_INT", "BOOLEAN", "BYTE", "CHAR", "DOUBLE", "FLOAT", "INSTANT",
        "INT", "LIST", "LONG", "MAP", "OBJECT_ARRAY", "PICKLED_BYTE_ARRAY", "PRIMITIVE_ARRAY", "ROW",
        "ROW_NAMED", "SHORT", "SQL_DATE", "SQL_TIME", "SQL_TIMESTAMP", "STRING", "TUPLE",
    ],
    "WatermarkStrategy": [
        "for_bounded_out_of_orderness", "for_monotonous_timestamps", "no_watermarks", "with_idleness",
        "with_timestamp_assigner", "with_watermark_alignment",
    ],
}

# Left out on purpose: they exist to hand objects to a JVM, which streamkernel does not have.
LEFT_OUT = {
    "AssignerWithPeriodicWatermarksWrapper": "wraps a Java AssignerWithPeriodicWatermarks",
    "TypeInformation.get_java_type_info": "returns the Java TypeInformation",
    "RowKind.to_j_row_kind": "returns the Java RowKind",
}

# PyFlink's submodules and the classes each of them makes public.
SUBMODULES = {
    "configuration": ["Configuration"],
    "restart_strategy": ["RestartStrategies", "RestartStrategyConfiguration"],
    "time": ["Duration", "Instant", "Time"],
    "typeinfo": ["TypeInformation", "Types", "RowTypeInfo"],
    "types": ["Row", "RowKind"],
    "watermark_strategy": ["TimestampAssigner", "WatermarkStrategy"],
}


@pytest.mark.parametrize("name", sorted(PYFLINK_COMMON))
def test_pyflink_common_names_and_methods(name):
    assert name in streamkernel.common.__all__
    cls = getattr(streamkernel.common, name)
    missing = [m for m in PYFLINK_COMMON[name] if not hasattr(cls, m)]
    assert not missing, f"{name} lacks {missing}"
    assert cls.__doc__, f"{name} has no docstring"


@pytest.mark.parametrize("module, names", sorted(SUBMODULES.items()))
def test_submodules_mirror_pyflinks(module, names):
    mod = importlib.import_module(f"streamkernel.common.{module}")
    for name in names:
        assert name in mod.__all__ and hasattr(mod, name)


def test_everything_exported_exists_and_is_documented():
    for name in streamkernel.common.__all__:
        obj = getattr(streamkernel.common, name)
        if callable(obj):
            assert obj.__doc__, name
    for name in LEFT_OUT:
        owner, _, method = name.partition(".")
        if method:
            assert not hasattr(getattr(streamkernel.common, owner), method)
        else:
            assert owner not in streamkernel.common.__all__
