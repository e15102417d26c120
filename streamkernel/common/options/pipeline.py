"""Options of a job's program and its execution: Flink's ``CoreOptions``, ``PipelineOptions``,
``ExecutionOptions`` and ``MetricOptions`` (the keys streamkernel reads)."""

from __future__ import annotations

from streamkernel.common.config_options import ConfigOptions
from streamkernel.common.time import Duration

__all__ = ["CoreOptions", "PipelineOptions", "ExecutionOptions", "MetricOptions"]

_key = ConfigOptions.key


class CoreOptions:
    """Flink's ``CoreOptions``: the default parallelism and the temporary directories."""

    DEFAULT_PARALLELISM = _key("parallelism.default").int_type().default_value(1).with_range(1, 1 << 15) \
        .with_description(
            "Parallelism of operators that do not set one (the environment writes its own: set, else the CPU count).")
    TMP_DIRS = _key("io.tmp.dirs").string_type().no_default_value().with_description(
        "Directory for temporary files (TaskManager working directories); unset: the system's temp directory.")
    LOG_DIR = _key("env.log.dir").string_type().no_default_value().with_description(
        "Directory of a standalone cluster's log files (streamkernel cluster/jobmanager/taskmanager start); "
        "unset: <--dir>/log. Also where a cluster in the program's process (%flink start, MiniCluster, the "
        "cluster of env.execute()) writes its log file; unset: $STREAMKERNEL_HOME/log. The REST API lists it "
        "at /jobmanager/logs.")
    LOG_FILE = _key("log.file").string_type().no_default_value().with_description(
        "The log file of one JobManager or TaskManager process (set by the entry points, as Flink's scripts "
        "pass -Dlog.file), or of a MiniCluster; served at /jobmanager/log and /taskmanagers/:id/log.")


class PipelineOptions:
    """Flink's ``PipelineOptions``: how the program is turned into a job."""

    NAME = _key("pipeline.name").string_type().no_default_value().with_description(
        "The job's name when execute() is given none.")
    MAX_PARALLELISM = _key("pipeline.max-parallelism").int_type().default_value(-1).with_range(-1, 1 << 15) \
        .with_description("Maximum parallelism (number of key groups) of keyed state; -1: derived from the parallelism.")
    AUTO_WATERMARK_INTERVAL = _key("pipeline.auto-watermark-interval").duration_type() \
        .default_value(Duration.of_millis(200)).with_description(
            "How often periodic watermarks are emitted; 0 disables periodic watermarks.")
    OBJECT_REUSE = _key("pipeline.object-reuse").boolean_type().default_value(False).with_description(
        "Whether records may be handed from operator to operator without a copy.")
    OPERATOR_CHAINING = _key("pipeline.operator-chaining.enabled").boolean_type().default_value(True) \
        .with_deprecated_keys("pipeline.operator-chaining").with_description(
            "Whether chainable operators run fused in one task.")
    GENERIC_TYPES = _key("pipeline.generic-types").boolean_type().default_value(True).with_description(
        "Whether generic (pickled) types are allowed (kept for PyFlink programs).")
    AUTO_GENERATE_UIDS = _key("pipeline.auto-generate-uids").boolean_type().default_value(True).with_description(
        "Whether operators without a uid get a generated one (kept for PyFlink programs).")
    FORCE_AVRO = _key("pipeline.force-avro").boolean_type().default_value(False).with_description(
        "A JVM serializer switch, accepted for PyFlink programs; no effect.")
    FORCE_KRYO = _key("pipeline.force-kryo").boolean_type().default_value(False).with_description(
        "A JVM serializer switch, accepted for PyFlink programs; no effect.")
    CLOSURE_CLEANER_LEVEL = _key("pipeline.closure-cleaner-level").enum_type(("NONE", "TOP_LEVEL", "RECURSIVE")) \
        .default_value("RECURSIVE").with_description("Closure cleaning of user functions (NONE turns it off).")
    GLOBAL_JOB_PARAMETERS = _key("pipeline.global-job-parameters").string_type().no_default_value() \
        .with_description("Parameters every function can read, written 'k1:v1,k2:v2'.")


class ExecutionOptions:
    """Flink's ``ExecutionOptions``: runtime mode, network buffer timeout, snapshot compression."""

    RUNTIME_MODE = _key("execution.runtime-mode").enum_type(("STREAMING", "BATCH", "AUTOMATIC")) \
        .default_value("STREAMING").with_description(
            "STREAMING, BATCH, or AUTOMATIC (BATCH when every source is bounded).")
    BUFFER_TIMEOUT_ENABLED = _key("execution.buffer-timeout.enabled").boolean_type().default_value(True) \
        .with_description("Whether partly filled network buffers are flushed after the buffer timeout; false: "
                          "only when full (set_buffer_timeout(-1)).")
    BUFFER_TIMEOUT = _key("execution.buffer-timeout.interval").duration_type().default_value(Duration.of_millis(100)) \
        .with_deprecated_keys("execution.buffer-timeout").with_description(
            "How long a partly filled network buffer waits before it is flushed; 0 flushes after every record.")
    USE_BATCH_STATE_BACKEND = _key("execution.batch-state-backend.enabled").boolean_type().default_value(True) \
        .with_description("BATCH mode: keyed operators keep the state of the current key only, in memory, "
                          "whatever 'state.backend.type' says (Flink's BatchExecutionStateBackend); false: the "
                          "configured backend, which keeps every key's state until the end.")
    SORTED_INPUTS_MEMORY = _key("execution.sorted-inputs.memory").memory_type().default_value(128 << 20) \
        .with_description("BATCH mode: the managed memory weight of a keyed operator's input sorter (in MiB; a "
                          "weight among the slot's sorters, not a size: the slot's managed memory is shared).")
    ADAPTIVE_AUTO_PARALLELISM_ENABLED = _key("execution.batch.adaptive.auto-parallelism.enabled").boolean_type() \
        .default_value(True).with_description(
            "BATCH mode: operators whose parallelism was not set run at the parallelism Flink's adaptive batch "
            "scheduler would choose (1 for small data, see docs/architecture.md); false: the environment's.")
    SNAPSHOT_COMPRESSION = _key("execution.checkpointing.snapshot-compression").boolean_type().default_value(False) \
        .with_description("Whether state snapshots are compressed.")


class MetricOptions:
    """Flink's ``MetricOptions``."""

    LATENCY_INTERVAL = _key("metrics.latency.interval").duration_type().default_value(Duration.of_seconds(1)) \
        .with_description(
            "How often sources emit latency markers; 0 disables latency tracking. Flink's default is 0; "
            "streamkernel's is 1 s so that the cockpit has latency samples.")
    REPORTERS_LIST = _key("metrics.reporters").string_type().no_default_value().with_description(
        "The reporters to start, of those configured (metrics.reporter.<name>.factory.class; comma-separated names); "
        "unset: every configured one. Each reporter's keys are metrics.reporter.<name>.*: docs/metrics.md.")
    SCOPE_DELIMITER = _key("metrics.scope.delimiter").string_type().default_value(".").with_description(
        "Delimiter of metric identifiers (identifier-based reporters; the Prometheus reporter, as Flink's, names "
        "metrics by logical scope and labels and ignores it).")
    SCOPE_NAMING_JM = _key("metrics.scope.jm").string_type().default_value("<host>.jobmanager").with_description(
        "Scope format of the JobManager's metric identifiers (identifier-based reporters only, as in Flink).")
    SCOPE_NAMING_JM_JOB = _key("metrics.scope.jm-job").string_type().default_value("<host>.jobmanager.<job_name>") \
        .with_deprecated_keys("metrics.scope.jm.job").with_description(
            "Scope format of a job's metric identifiers on the JobManager (identifier-based reporters only).")
    SCOPE_NAMING_TM = _key("metrics.scope.tm").string_type().default_value("<host>.taskmanager.<tm_id>") \
        .with_description("Scope format of a TaskManager's metric identifiers (identifier-based reporters only).")
    SCOPE_NAMING_TM_JOB = _key("metrics.scope.tm-job").string_type() \
        .default_value("<host>.taskmanager.<tm_id>.<job_name>").with_deprecated_keys("metrics.scope.tm.job") \
        .with_description("Scope format of a job's metric identifiers on a TaskManager (identifier-based reporters only).")
    SCOPE_NAMING_TASK = _key("metrics.scope.task").string_type() \
        .default_value("<host>.taskmanager.<tm_id>.<job_name>.<task_name>.<subtask_index>") \
        .with_description("Scope format of a task's metric identifiers (identifier-based reporters only).")
    SCOPE_NAMING_OPERATOR = _key("metrics.scope.operator").string_type() \
        .default_value("<host>.taskmanager.<tm_id>.<job_name>.<operator_name>.<subtask_index>") \
        .with_description("Scope format of an operator's metric identifiers (identifier-based reporters only).")
