"""Options of fault tolerance: Flink's ``CheckpointingOptions``, ``StateBackendOptions``,
``RocksDBOptions``, ``StateRecoveryOptions`` and ``RestartStrategyOptions``. Each has its
Flink 2.x key; the 1.x key, where it differed, is a deprecated key still read."""

from __future__ import annotations

from streamkernel.common.config_options import ConfigOptions
from streamkernel.common.time import Duration

__all__ = ["CheckpointingOptions", "StateBackendOptions", "RocksDBOptions", "StateRecoveryOptions",
           "RestartStrategyOptions"]

_key = ConfigOptions.key
_CP = "execution.checkpointing."


class CheckpointingOptions:
    """Flink's ``CheckpointingOptions``."""

    CHECKPOINTING_INTERVAL = _key(_CP + "interval").duration_type().no_default_value().with_description(
        "Time between checkpoints; unset or 0: checkpointing is disabled.")
    CHECKPOINTING_MODE = _key(_CP + "mode").enum_type(("EXACTLY_ONCE", "AT_LEAST_ONCE")) \
        .default_value("EXACTLY_ONCE").with_description("Checkpoint guarantee: barriers aligned (EXACTLY_ONCE) or not.")
    CHECKPOINTING_TIMEOUT = _key(_CP + "timeout").duration_type().default_value(Duration.of_minutes(10)) \
        .with_range(1).with_description("A checkpoint not complete after this long is aborted.")
    MIN_PAUSE_BETWEEN_CHECKPOINTS = _key(_CP + "min-pause").duration_type().default_value(Duration.of_millis(0)) \
        .with_description("Minimal time between the end of one checkpoint and the start of the next.")
    MAX_CONCURRENT_CHECKPOINTS = _key(_CP + "max-concurrent-checkpoints").int_type().default_value(1) \
        .with_range(1).with_description("Checkpoints that may be in progress at the same time.")
    TOLERABLE_FAILURE_NUMBER = _key(_CP + "tolerable-failed-checkpoints").int_type().default_value(0) \
        .with_range(0).with_description("Consecutive checkpoint failures tolerated before the job fails.")
    EXTERNALIZED_CHECKPOINT_RETENTION = _key(_CP + "externalized-checkpoint-retention") \
        .enum_type(("DELETE_ON_CANCELLATION", "RETAIN_ON_CANCELLATION", "NO_EXTERNALIZED_CHECKPOINTS")) \
        .default_value("NO_EXTERNALIZED_CHECKPOINTS").with_description(
            "Whether completed checkpoints are kept when the job is cancelled.")
    ENABLE_UNALIGNED = _key(_CP + "unaligned.enabled").boolean_type().default_value(False) \
        .with_deprecated_keys(_CP + "unaligned").with_description("Whether checkpoints may be unaligned.")
    ALIGNED_CHECKPOINT_TIMEOUT = _key(_CP + "aligned-checkpoint-timeout").duration_type() \
        .default_value(Duration.of_millis(0)).with_deprecated_keys(_CP + "alignment-timeout").with_description(
            "Alignment time after which a checkpoint switches to unaligned (with unaligned checkpoints "
            "enabled); 0: unaligned from the start.")
    FORCE_UNALIGNED = _key(_CP + "unaligned.forced").boolean_type().default_value(False).with_description(
        "Whether unaligned checkpoints are forced even where they are normally disabled.")
    CHECKPOINT_STORAGE = _key(_CP + "storage").string_type().no_default_value() \
        .with_deprecated_keys("state.checkpoint-storage").with_description(
            "Where checkpoints are stored: 'jobmanager' or 'filesystem' (default when a directory is set).")
    CHECKPOINTS_DIRECTORY = _key(_CP + "dir").string_type().no_default_value() \
        .with_deprecated_keys("state.checkpoints.dir").with_description("Base directory of checkpoints.")
    SAVEPOINT_DIRECTORY = _key(_CP + "savepoint-dir").string_type().no_default_value() \
        .with_deprecated_keys("state.savepoints.dir").with_description("Default directory of savepoints.")
    MAX_RETAINED_CHECKPOINTS = _key(_CP + "num-retained").int_type().default_value(1).with_range(1) \
        .with_deprecated_keys("state.checkpoints.num-retained").with_description(
            "Completed checkpoints kept; older ones are deleted.")
    INCREMENTAL_CHECKPOINTS = _key(_CP + "incremental").boolean_type().default_value(False) \
        .with_deprecated_keys("state.backend.incremental").with_description(
            "Whether the state backend snapshots only what changed (rocksdb).")


class StateBackendOptions:
    """Flink's ``StateBackendOptions``."""

    STATE_BACKEND = _key("state.backend.type").string_type().default_value("hashmap") \
        .with_deprecated_keys("state.backend").with_description("Where working state lives: hashmap or rocksdb.")


class RocksDBOptions:
    """Flink's ``RocksDBOptions`` (the rocksdb state backend; needs rocksdict)."""

    LOCAL_DIRECTORIES = _key("state.backend.rocksdb.localdir").string_type().no_default_value().with_description(
        "Directories of the RocksDB instances, separated by ','; unset: the TaskManager's working directory.")
    PREDEFINED_OPTIONS = _key("state.backend.rocksdb.predefined-options") \
        .enum_type(("DEFAULT", "SPINNING_DISK_OPTIMIZED", "SPINNING_DISK_OPTIMIZED_HIGH_MEM", "FLASH_SSD_OPTIMIZED")) \
        .default_value("DEFAULT").with_description("A predefined set of RocksDB options.")
    CHECKPOINT_TRANSFER_THREAD_NUM = _key("state.backend.rocksdb.checkpoint.transfer.thread.num").int_type() \
        .default_value(4).with_range(1).with_description("Threads that transfer files of a snapshot.")
    OPTIONS_FACTORY = _key("state.backend.rocksdb.options-factory").string_type().no_default_value() \
        .with_description("Import path of a RocksDB options factory ('module:name').")
    USE_MANAGED_MEMORY = _key("state.backend.rocksdb.memory.managed").boolean_type().default_value(True) \
        .with_description("Whether the RocksDB instances of a slot share one block cache and write buffer manager "
                          "sized from the slot's managed memory.")
    FIX_PER_SLOT_MEMORY_SIZE = _key("state.backend.rocksdb.memory.fixed-per-slot").memory_type().no_default_value() \
        .with_range(1).with_description(
            "Memory shared by the RocksDB instances of a slot (block cache and write buffers); overrides "
            "state.backend.rocksdb.memory.managed.")
    FIX_PER_TM_MEMORY_SIZE = _key("state.backend.rocksdb.memory.fixed-per-tm").memory_type().no_default_value() \
        .with_description(
            "The fixed total amount of memory, shared among all RocksDB instances per Task Manager (cluster-level "
            "option). This option only takes effect if neither 'state.backend.rocksdb.memory.managed' nor "
            "'state.backend.rocksdb.memory.fixed-per-slot' are not configured. If none is configured then each "
            "RocksDB column family state has its own memory caches (as controlled by the column family options).")
    WRITE_BUFFER_RATIO = _key("state.backend.rocksdb.memory.write-buffer-ratio").double_type().default_value(0.5) \
        .with_description("Fraction of a slot's RocksDB memory that the write buffers (memtables) may take, in (0, 1).")
    HIGH_PRIORITY_POOL_RATIO = _key("state.backend.rocksdb.memory.high-prio-pool-ratio").double_type() \
        .default_value(0.1).with_description(
            "Fraction of the shared cache reserved for index and filter blocks, in (0, 1).")


class StateRecoveryOptions:
    """Flink's ``StateRecoveryOptions``: the checkpoint or savepoint a job starts from."""

    SAVEPOINT_PATH = _key("execution.state-recovery.path").string_type().no_default_value() \
        .with_deprecated_keys("execution.savepoint.path").with_description(
            "Checkpoint or savepoint the job restores its state from.")
    SAVEPOINT_IGNORE_UNCLAIMED_STATE = _key("execution.state-recovery.ignore-unclaimed-state").boolean_type() \
        .default_value(False).with_deprecated_keys("execution.savepoint.ignore-unclaimed-state").with_description(
            "Whether state of the snapshot that no operator of the job claims is allowed (else the restore fails).")


_R = "restart-strategy."
_RESTART_TYPES = ("none", "off", "disable", "fixed-delay", "fixeddelay", "failure-rate", "failurerate",
                  "exponential-delay", "exponentialdelay")


class RestartStrategyOptions:
    """Flink's ``RestartStrategyOptions``."""

    RESTART_STRATEGY = _key(_R + "type").enum_type(_RESTART_TYPES).no_default_value() \
        .with_deprecated_keys("restart-strategy").with_description(
            "How a failed job restarts; unset: exponential-delay with checkpointing, else none.")
    FIXED_DELAY_ATTEMPTS = _key(_R + "fixed-delay.attempts").int_type().default_value(1).with_range(0) \
        .with_description("fixed-delay: restarts before the job fails.")
    FIXED_DELAY_DELAY = _key(_R + "fixed-delay.delay").duration_type().default_value(Duration.of_seconds(1)) \
        .with_description("fixed-delay: time between two restarts.")
    FAILURE_RATE_MAX_FAILURES_PER_INTERVAL = _key(_R + "failure-rate.max-failures-per-interval").int_type() \
        .default_value(1).with_range(1).with_description("failure-rate: failures per interval before the job fails.")
    FAILURE_RATE_FAILURE_RATE_INTERVAL = _key(_R + "failure-rate.failure-rate-interval").duration_type() \
        .default_value(Duration.of_minutes(1)).with_description("failure-rate: the interval failures are counted in.")
    FAILURE_RATE_DELAY = _key(_R + "failure-rate.delay").duration_type().default_value(Duration.of_seconds(1)) \
        .with_description("failure-rate: time between two restarts.")
    EXPONENTIAL_DELAY_INITIAL_BACKOFF = _key(_R + "exponential-delay.initial-backoff").duration_type() \
        .default_value(Duration.of_seconds(1)).with_description("exponential-delay: the first delay.")
    EXPONENTIAL_DELAY_MAX_BACKOFF = _key(_R + "exponential-delay.max-backoff").duration_type() \
        .default_value(Duration.of_minutes(1)).with_description("exponential-delay: the longest delay.")
    EXPONENTIAL_DELAY_BACKOFF_MULTIPLIER = _key(_R + "exponential-delay.backoff-multiplier").double_type() \
        .default_value(1.5).with_range(1.0).with_description("exponential-delay: factor of each next delay.")
    EXPONENTIAL_DELAY_RESET_BACKOFF_THRESHOLD = _key(_R + "exponential-delay.reset-backoff-threshold") \
        .duration_type().default_value(Duration.of_hours(1)).with_description(
            "exponential-delay: time without failure after which the delay starts over.")
    EXPONENTIAL_DELAY_JITTER_FACTOR = _key(_R + "exponential-delay.jitter-factor").double_type() \
        .default_value(0.1).with_range(0.0, 1.0).with_description("exponential-delay: random part of each delay.")
    EXPONENTIAL_DELAY_ATTEMPTS = _key(_R + "exponential-delay.attempts-before-reset-backoff").int_type() \
        .default_value(2**31 - 1).with_range(1).with_description(
            "exponential-delay: restarts before the job fails (counted since the last reset).")
