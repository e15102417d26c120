"""ExecutionConfig: the settings of one program's execution (PyFlink's ExecutionConfig).

A plain holder, read by the environment and the runtime: default and maximum parallelism,
the automatic watermark interval, object reuse, global job parameters, latency tracking,
task cancellation and a few serializer switches that only matter to a JVM (kept so that
PyFlink programs run unchanged). :meth:`ExecutionConfig.to_configuration` and the
constructor translate to and from Flink 2's configuration keys.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Dict, List, Mapping, Optional

from streamkernel.common.config_options import format_value, parse_boolean, parse_duration_ms
from streamkernel.common.config_options import parse_int
from streamkernel.common.restart_strategy import RestartStrategyConfiguration
from streamkernel.common.time import Duration
from streamkernel.errors import InvalidProgramError

__all__ = ["ExecutionConfig", "InputDependencyConstraint"]

_MAX_PARALLELISM_UPPER_BOUND = 1 << 15

# attribute -> (Flink 2 configuration key, kind, default)
_KEYS: Dict[str, tuple] = {
    "_parallelism": ("parallelism.default", "int", -1),
    "_max_parallelism": ("pipeline.max-parallelism", "int", -1),
    "_auto_watermark_interval": ("pipeline.auto-watermark-interval", "duration", 200),
    "_object_reuse": ("pipeline.object-reuse", "bool", False),
    "_latency_tracking_interval": ("metrics.latency.interval", "duration", 0),
    "_task_cancellation_interval": ("task.cancellation.interval", "int", 30_000),
    "_task_cancellation_timeout": ("task.cancellation.timeout", "int", 180_000),
    "_generic_types": ("pipeline.generic-types", "bool", True),
    "_auto_generated_uids": ("pipeline.auto-generate-uids", "bool", True),
    "_force_avro": ("pipeline.force-avro", "bool", False),
    "_force_kryo": ("pipeline.force-kryo", "bool", False),
    "_snapshot_compression": ("execution.checkpointing.snapshot-compression", "bool", False),
}
_CLOSURE_CLEANER_KEY = "pipeline.closure-cleaner-level"
_GLOBAL_PARAMETERS_KEY = "pipeline.global-job-parameters"


class InputDependencyConstraint(Enum):
    """When a task with several inputs may be scheduled (Flink 1.x batch scheduling):
    ``ANY`` input has data, or ``ALL`` inputs have data. Kept for PyFlink programs; the
    streaming scheduler deploys all tasks at once."""

    ANY = 0
    ALL = 1


class ExecutionConfig:
    """A config to define the behavior of the program execution.

        >>> config = ExecutionConfig().set_parallelism(4).set_auto_watermark_interval(100)
        >>> config.get_parallelism(), config.get_auto_watermark_interval()
        (4, 100)

    :param configuration: Flink configuration keys to start from (``parallelism.default``,
        ``pipeline.auto-watermark-interval``, ``pipeline.object-reuse`` ...).
    """

    #: Parallelism value meaning "use the environment's default parallelism".
    PARALLELISM_DEFAULT = -1
    #: Parallelism value meaning "unknown or unset; leave the parallelism unchanged".
    PARALLELISM_UNKNOWN = -2

    def __init__(self, configuration: Optional[Mapping[str, Any]] = None) -> None:
        for attribute, (_, _, default) in _KEYS.items():
            setattr(self, attribute, default)
        self._closure_cleaner = True
        self._global_job_parameters: Dict[str, str] = {}
        self._restart_strategy: Optional[RestartStrategyConfiguration] = None
        if configuration:
            self._configure(configuration)

    def _configure(self, conf: Mapping[str, Any]) -> None:
        for attribute, (key, kind, _) in _KEYS.items():
            if conf.get(key) is None:
                continue
            value = conf[key]
            if kind == "int":
                setattr(self, attribute, parse_int(value, key))
            elif kind == "bool":
                setattr(self, attribute, parse_boolean(value, key))
            else:
                setattr(self, attribute, parse_duration_ms(value, key))
        if conf.get(_CLOSURE_CLEANER_KEY) is not None:
            self._closure_cleaner = str(conf[_CLOSURE_CLEANER_KEY]).strip().upper() != "NONE"
        parameters = conf.get(_GLOBAL_PARAMETERS_KEY)
        if parameters:
            pairs = (item.split(":", 1) for item in str(parameters).split(",") if item.strip())
            self._global_job_parameters = {k.strip(): v.strip() for k, v in pairs}

    def to_configuration(self) -> Dict[str, str]:
        """The settings that differ from Flink's defaults, as Flink 2 configuration keys."""
        conf: Dict[str, str] = {}
        for attribute, (key, kind, default) in _KEYS.items():
            value = getattr(self, attribute)
            if value != default:
                conf[key] = format_value(Duration.of_millis(value) if kind == "duration" else value)
        if not self._closure_cleaner:
            conf[_CLOSURE_CLEANER_KEY] = "NONE"
        if self._global_job_parameters:
            conf[_GLOBAL_PARAMETERS_KEY] = format_value(self._global_job_parameters)
        if self._restart_strategy is not None:
            conf.update(self._restart_strategy.to_configuration())
        return conf

    # -- parallelism ---------------------------------------------------------------------------

    def get_parallelism(self) -> int:
        """The default parallelism of operations, or ``PARALLELISM_DEFAULT`` (-1) when the
        environment's default is used."""
        return self._parallelism

    def set_parallelism(self, parallelism: int) -> "ExecutionConfig":
        """Sets the default parallelism of operations (> 0, or ``PARALLELISM_DEFAULT``)."""
        if not _is_int(parallelism) or (not 0 < parallelism <= _MAX_PARALLELISM_UPPER_BOUND
                                        and parallelism != self.PARALLELISM_DEFAULT):
            raise InvalidProgramError(
                f"set_parallelism(parallelism) needs an int in 1..{_MAX_PARALLELISM_UPPER_BOUND} (or -1 for the "
                f"default), got {parallelism!r}"
            )
        self._parallelism = parallelism
        return self

    def get_max_parallelism(self) -> int:
        """The maximum parallelism (number of key groups), or -1 when derived from the parallelism."""
        return self._max_parallelism

    def set_max_parallelism(self, max_parallelism: int) -> "ExecutionConfig":
        """Sets the maximum parallelism: the upper limit for rescaling and the number of key groups."""
        if not _is_int(max_parallelism) or not 0 < max_parallelism <= _MAX_PARALLELISM_UPPER_BOUND:
            raise InvalidProgramError(
                f"set_max_parallelism(max_parallelism) needs an int in 1..{_MAX_PARALLELISM_UPPER_BOUND}, "
                f"got {max_parallelism!r}"
            )
        self._max_parallelism = max_parallelism
        return self

    # -- time intervals ------------------------------------------------------------------------

    def get_auto_watermark_interval(self) -> int:
        """The interval between periodic watermarks, in milliseconds (200 by default)."""
        return self._auto_watermark_interval

    def set_auto_watermark_interval(self, interval: int) -> "ExecutionConfig":
        """Sets the interval between periodic watermarks, in milliseconds (0 disables them)."""
        self._auto_watermark_interval = _non_negative(interval, "set_auto_watermark_interval(interval)")
        return self

    def get_latency_tracking_interval(self) -> int:
        """The interval between latency markers, in milliseconds (<= 0: disabled, the default)."""
        return self._latency_tracking_interval

    def set_latency_tracking_interval(self, interval: int) -> "ExecutionConfig":
        """Sets the interval between latency markers sent from sources, in milliseconds;
        a value <= 0 disables latency tracking."""
        if not _is_int(interval):
            raise InvalidProgramError(f"set_latency_tracking_interval(interval) needs an int, got {interval!r}")
        self._latency_tracking_interval = interval
        return self

    def get_task_cancellation_interval(self) -> int:
        """Milliseconds between attempts to cancel a task that does not stop (30000 by default)."""
        return self._task_cancellation_interval

    def set_task_cancellation_interval(self, interval: int) -> "ExecutionConfig":
        """Sets the milliseconds between attempts to cancel a running task."""
        self._task_cancellation_interval = _non_negative(interval, "set_task_cancellation_interval(interval)")
        return self

    def get_task_cancellation_timeout(self) -> int:
        """Milliseconds after which a stuck cancellation is a fatal TaskManager error (0: never)."""
        return self._task_cancellation_timeout

    def set_task_cancellation_timeout(self, timeout: int) -> "ExecutionConfig":
        """Sets the task cancellation timeout in milliseconds; 0 disables it."""
        self._task_cancellation_timeout = _non_negative(timeout, "set_task_cancellation_timeout(timeout)")
        return self

    # -- switches ------------------------------------------------------------------------------

    def enable_object_reuse(self) -> "ExecutionConfig":
        """Lets chained operators pass records without copying them (user functions must
        not keep or modify their inputs)."""
        self._object_reuse = True
        return self

    def disable_object_reuse(self) -> "ExecutionConfig":
        """Records passed between chained operators are not shared (the default)."""
        self._object_reuse = False
        return self

    def is_object_reuse_enabled(self) -> bool:
        """Whether object reuse is enabled."""
        return self._object_reuse

    def enable_closure_cleaner(self) -> "ExecutionConfig":
        """Enables the closure cleaner (a JVM concept; recorded only)."""
        self._closure_cleaner = True
        return self

    def disable_closure_cleaner(self) -> "ExecutionConfig":
        """Disables the closure cleaner (a JVM concept; recorded only)."""
        self._closure_cleaner = False
        return self

    def is_closure_cleaner_enabled(self) -> bool:
        """Whether the closure cleaner is enabled."""
        return self._closure_cleaner

    def enable_generic_types(self) -> None:
        """Allows generic (Kryo-serialized) types; a JVM switch, recorded only."""
        self._generic_types = True

    def disable_generic_types(self) -> None:
        """Forbids generic (Kryo-serialized) types; a JVM switch, recorded only."""
        self._generic_types = False

    def has_generic_types_disabled(self) -> bool:
        """Whether generic types are disabled."""
        return not self._generic_types

    def enable_auto_generated_uids(self) -> None:
        """Operators without ``uid`` get generated ones (the default)."""
        self._auto_generated_uids = True

    def disable_auto_generated_uids(self) -> None:
        """Every operator must be given a ``uid`` (so savepoints survive program changes)."""
        self._auto_generated_uids = False

    def has_auto_generated_uids_enabled(self) -> bool:
        """Whether operator uids are generated when not set."""
        return self._auto_generated_uids

    def enable_force_avro(self) -> None:
        """Forces Avro serialization of POJOs; a JVM switch, recorded only."""
        self._force_avro = True

    def disable_force_avro(self) -> None:
        """Stops forcing Avro serialization; a JVM switch, recorded only."""
        self._force_avro = False

    def is_force_avro_enabled(self) -> bool:
        """Whether Avro is forced for POJOs."""
        return self._force_avro

    def enable_force_kryo(self) -> None:
        """Forces Kryo serialization of POJOs; a JVM switch, recorded only."""
        self._force_kryo = True

    def disable_force_kryo(self) -> None:
        """Stops forcing Kryo serialization; a JVM switch, recorded only."""
        self._force_kryo = False

    def is_force_kryo_enabled(self) -> bool:
        """Whether Kryo is forced for POJOs."""
        return self._force_kryo

    def get_default_kryo_serializer_classes(self) -> Dict[str, str]:
        """Registered default Kryo serializers: always empty (there is no Kryo here)."""
        return {}

    def get_registered_kryo_types(self) -> List[str]:
        """Types registered with Kryo: always empty (there is no Kryo here)."""
        return []

    def get_registered_pojo_types(self) -> List[str]:
        """Types registered as POJOs: always empty (there are no POJOs here)."""
        return []

    def is_use_snapshot_compression(self) -> bool:
        """Whether keyed state in full checkpoints and savepoints is compressed."""
        return self._snapshot_compression

    def set_use_snapshot_compression(self, use_snapshot_compression: bool) -> None:
        """Compresses keyed state in full checkpoints and savepoints if True."""
        self._snapshot_compression = bool(use_snapshot_compression)

    # -- parameters and restart strategy -------------------------------------------------------

    def get_global_job_parameters(self) -> Dict[str, str]:
        """The user's global job parameters (a copy)."""
        return dict(self._global_job_parameters)

    def set_global_job_parameters(self, global_job_parameters_dict: Mapping[str, Any]) -> None:
        """Registers user parameters visible to every function (values are stored as text)."""
        if not isinstance(global_job_parameters_dict, Mapping):
            raise InvalidProgramError(
                f"set_global_job_parameters needs a dict, got {type(global_job_parameters_dict).__name__}"
            )
        self._global_job_parameters = {str(k): str(v) for k, v in global_job_parameters_dict.items()}

    def set_restart_strategy(self, restart_strategy_configuration: RestartStrategyConfiguration) -> None:
        """Sets the restart strategy (PyFlink 1.x; Flink 2 uses ``restart-strategy.*`` keys,
        which :meth:`to_configuration` produces from it)."""
        if not isinstance(restart_strategy_configuration, RestartStrategyConfiguration):
            raise InvalidProgramError(
                "set_restart_strategy needs a configuration from RestartStrategies, got "
                f"{restart_strategy_configuration!r}"
            )
        self._restart_strategy = restart_strategy_configuration

    def get_restart_strategy(self) -> Optional[RestartStrategyConfiguration]:
        """The restart strategy set with :meth:`set_restart_strategy`, or None."""
        return self._restart_strategy

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ExecutionConfig) and self.__dict__ == other.__dict__

    __hash__ = None  # type: ignore[assignment]  # mutable settings holder

    def __repr__(self) -> str:
        return f"ExecutionConfig({self.to_configuration()})"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _non_negative(value: Any, call: str) -> int:
    if not _is_int(value) or value < 0:
        raise InvalidProgramError(f"{call} needs an int >= 0 (milliseconds), got {value!r}")
    return value
