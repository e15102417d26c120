"""streamkernel.common: classes shared by the DataStream API and the runtime (``pyflink.common``).

Everything ``pyflink.common`` exports that makes sense without a JVM, under the same names:
configuration (:class:`Configuration`, :class:`ConfigOptions`), execution settings
(:class:`ExecutionConfig`, :class:`RestartStrategies`), time (:class:`Duration`,
:class:`Time`, :class:`Instant`), records and types (:class:`Row`, :class:`RowKind`,
:class:`Types`), event time (:class:`WatermarkStrategy`), jobs (:class:`JobClient`,
:class:`JobStatus`, :class:`JobExecutionResult`) and serialization schemas.

Left out on purpose, because they wrap JVM objects: ``AssignerWithPeriodicWatermarksWrapper``,
``TypeInformation.get_java_type_info`` and ``RowKind.to_j_row_kind``.

Extras beyond PyFlink (named so in their docstrings): :func:`parse_duration_ms`,
:func:`parse_memory_size`, :func:`to_millis`, :func:`restart_strategy_from_configuration`,
``RestartStrategies.exponential_delay_restart``, :class:`WatermarkGenerator`,
:data:`MIN_WATERMARK` / :data:`MAX_WATERMARK`, ``Configuration.get``/``set``.
"""

from __future__ import annotations

from streamkernel.common.completable_future import CompletableFuture
from streamkernel.common.config_options import ConfigOption, ConfigOptions, parse_memory_size
from streamkernel.common.configuration import Configuration, parse_duration_ms
from streamkernel.common.execution_config import ExecutionConfig, InputDependencyConstraint
from streamkernel.common.job_client import JobClient
from streamkernel.common.job_execution_result import JobExecutionResult
from streamkernel.common.job_status import JobID, JobStatus
from streamkernel.common.restart_strategy import (
    RestartStrategies,
    RestartStrategyConfiguration,
    restart_strategy_from_configuration,
)
from streamkernel.common.serialization import (
    ByteArraySchema,
    DeserializationSchema,
    Encoder,
    SerializationSchema,
    SimpleStringSchema,
    TypeSerializer,
)
from streamkernel.common.time import Duration, Instant, Time, to_millis
from streamkernel.common.typeinfo import RowTypeInfo, TypeInformation, Types
from streamkernel.common.types import Row, RowKind
from streamkernel.common.watermark_strategy import (
    MAX_WATERMARK,
    MIN_WATERMARK,
    TimestampAssigner,
    WatermarkGenerator,
    WatermarkStrategy,
)

__all__ = [
    # pyflink.common
    "ByteArraySchema",
    "CompletableFuture",
    "ConfigOption",
    "ConfigOptions",
    "Configuration",
    "DeserializationSchema",
    "Duration",
    "Encoder",
    "ExecutionConfig",
    "InputDependencyConstraint",
    "Instant",
    "JobClient",
    "JobExecutionResult",
    "JobID",
    "JobStatus",
    "RestartStrategies",
    "RestartStrategyConfiguration",
    "Row",
    "RowKind",
    "SerializationSchema",
    "SimpleStringSchema",
    "Time",
    "TypeInformation",
    "TypeSerializer",
    "Types",
    "WatermarkStrategy",
    # also public in pyflink.common's modules
    "RowTypeInfo",
    "TimestampAssigner",
    # streamkernel extras
    "MAX_WATERMARK",
    "MIN_WATERMARK",
    "WatermarkGenerator",
    "parse_duration_ms",
    "parse_memory_size",
    "restart_strategy_from_configuration",
    "to_millis",
]
