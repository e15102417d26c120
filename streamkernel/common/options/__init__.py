"""Every configuration key the runtime reads, declared once with its type, default,
allowed values and description, grouped as Flink groups them (``CheckpointingOptions``,
``TaskManagerOptions`` ...).

Read an option through its declaration, never with a default repeated at the read::

    >>> from streamkernel.common.options import TaskManagerOptions
    >>> TaskManagerOptions.NUM_TASK_SLOTS.get({"taskmanager.numberOfTaskSlots": "4"})
    4

:func:`validate_configuration` parses every declared key of a job's configuration at
submission, so that the first bad value fails at once (naming the key, the value and what
is expected), before anything is deployed. Keys not declared here are accepted and
ignored, as Flink ignores them. ``docs/configuration.md`` is generated from this registry
(:mod:`streamkernel.common.options.docs`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

from streamkernel.common.config_options import ConfigOption
from streamkernel.common.options.checkpointing import (
    CheckpointingOptions,
    RestartStrategyOptions,
    RocksDBOptions,
    StateBackendOptions,
    StateRecoveryOptions,
)
from streamkernel.common.options.cluster import (
    BackendOptions,
    HeartbeatManagerOptions,
    JobManagerOptions,
    MiniClusterOptions,
    NettyShuffleEnvironmentOptions,
    RpcOptions,
    TaskManagerOptions,
    WebOptions,
)
from streamkernel.common.options.high_availability import HighAvailabilityOptions
from streamkernel.common.options.memory import AlgorithmOptions, JobManagerMemoryOptions, TaskManagerMemoryOptions
from streamkernel.common.options.pipeline import CoreOptions, ExecutionOptions, MetricOptions, PipelineOptions
from streamkernel.common.options.rest import RestOptions, rest_port_range
from streamkernel.errors import IllegalConfigurationError

__all__ = [
    "OPTION_GROUPS",
    "all_options",
    "find_option",
    "validate_configuration",
    "CoreOptions",
    "PipelineOptions",
    "ExecutionOptions",
    "MetricOptions",
    "CheckpointingOptions",
    "StateBackendOptions",
    "RocksDBOptions",
    "StateRecoveryOptions",
    "RestartStrategyOptions",
    "TaskManagerOptions",
    "TaskManagerMemoryOptions",
    "NettyShuffleEnvironmentOptions",
    "HeartbeatManagerOptions",
    "JobManagerOptions",
    "JobManagerMemoryOptions",
    "AlgorithmOptions",
    "RpcOptions",
    "WebOptions",
    "RestOptions",
    "MiniClusterOptions",
    "BackendOptions",
    "HighAvailabilityOptions",
]

#: The option classes, in the order the docs list them.
OPTION_GROUPS: tuple[type, ...] = (
    CoreOptions, PipelineOptions, ExecutionOptions, CheckpointingOptions, StateBackendOptions, RocksDBOptions,
    StateRecoveryOptions, RestartStrategyOptions, MetricOptions, TaskManagerOptions, TaskManagerMemoryOptions,
    AlgorithmOptions, NettyShuffleEnvironmentOptions, HeartbeatManagerOptions, JobManagerOptions,
    JobManagerMemoryOptions, RpcOptions, RestOptions, WebOptions, MiniClusterOptions, BackendOptions, HighAvailabilityOptions,
)


def group_options(group: type) -> list[ConfigOption[Any]]:
    """The options one group declares, in declaration order."""
    return [value for value in vars(group).values() if isinstance(value, ConfigOption)]


def all_options() -> list[ConfigOption[Any]]:
    """Every declared option, group by group."""
    return [option for group in OPTION_GROUPS for option in group_options(group)]


def _index() -> dict[str, ConfigOption[Any]]:
    index: dict[str, ConfigOption[Any]] = {}
    for option in all_options():
        for key in (option.key(),) + option.deprecated_keys():
            index.setdefault(key, option)
    return index


_BY_KEY = _index()


def find_option(key: str) -> Optional[ConfigOption[Any]]:
    """The option declaring ``key`` (as its key or a deprecated key), or None."""
    return _BY_KEY.get(key)


def validate_configuration(configuration: Mapping[str, Any]) -> None:
    """Parse every declared key of ``configuration``; the first value that does not fit its
    option raises :class:`~streamkernel.errors.IllegalConfigurationError` naming the key,
    the value and what is expected. Undeclared keys are ignored (as Flink ignores them).

        >>> validate_configuration({"taskmanager.numberOfTaskSlots": "two"})
        Traceback (most recent call last):
        ...
        streamkernel.errors.IllegalConfigurationError: Could not parse value 'two' for key
        'taskmanager.numberOfTaskSlots': expected an integer
    """
    for key, value in configuration.items():
        option = _BY_KEY.get(key)
        if option is None:
            continue
        if option.key() != key:  # a deprecated key: name the key the user wrote
            option = option._copy(key=key)
        option.parse(value)
    _check_buffer_debloat(configuration)
    rest_port_range(configuration)  # rest.bind-port: a port or a range of ports
    from streamkernel.runtime.state.rocksdb_memory import RocksDBMemoryConfiguration  # lazy: no cycle

    RocksDBMemoryConfiguration.from_configuration(configuration)  # the ratios together, as Flink checks
    from streamkernel.graph.managed_memory import consumer_weights  # lazy: no cycle

    consumer_weights(configuration)  # taskmanager.memory.managed.consumer-weights is a map of weights


def _check_buffer_debloat(configuration: Mapping[str, Any]) -> None:
    """Buffer debloating's smallest buffer must fit the configured one (Flink checks min <= max)."""
    minimum = TaskManagerOptions.MIN_MEMORY_SEGMENT_SIZE
    if not minimum.is_set(configuration):
        return
    smallest, largest = minimum.get(configuration), NettyShuffleEnvironmentOptions.BATCH_SIZE.get(configuration)
    if smallest > largest:
        raise IllegalConfigurationError(
            f"Invalid value {smallest!r} for key '{minimum.source_key(configuration)}': the smallest buffer "
            f"(records) must be at most taskmanager.network.batch-size ({largest})")
