"""Options of the cluster processes: Flink's ``TaskManagerOptions``,
``NettyShuffleEnvironmentOptions``, ``HeartbeatManagerOptions``, ``JobManagerOptions``,
``RpcOptions``, ``WebOptions`` and ``MiniClusterOptions``, and streamkernel's own backend
options (where TaskManagers run)."""

from __future__ import annotations

from streamkernel.common.config_options import ConfigOptions
from streamkernel.common.time import Duration

__all__ = ["TaskManagerOptions", "NettyShuffleEnvironmentOptions", "HeartbeatManagerOptions", "JobManagerOptions",
           "RpcOptions", "WebOptions", "MiniClusterOptions", "BackendOptions"]

_key = ConfigOptions.key


class TaskManagerOptions:
    """Flink's ``TaskManagerOptions``."""

    NUM_TASK_SLOTS = _key("taskmanager.numberOfTaskSlots").int_type().default_value(1).with_range(1) \
        .with_description("Slots per TaskManager (for env.execute() without a cluster: sized to fit the job).")
    BIND_HOST = _key("taskmanager.bind-host").string_type().no_default_value().with_description(
        "Address a TaskManager's listeners bind to; unset: loopback.")
    REGISTRATION_TIMEOUT = _key("taskmanager.registration.timeout").duration_type() \
        .default_value(Duration.of_seconds(60)).with_range(1).with_description(
            "How long starting TaskManagers in other processes may take to register (Flink's default: 5 min).")
    TASK_CANCELLATION_INTERVAL = _key("task.cancellation.interval").long_type().default_value(30_000) \
        .with_range(0).with_description("Milliseconds between attempts to cancel a task (kept for PyFlink programs).")
    TASK_CANCELLATION_TIMEOUT = _key("task.cancellation.timeout").long_type().default_value(180_000) \
        .with_range(0).with_description("Milliseconds after which a task that does not cancel is fatal (kept for "
                                        "PyFlink programs).")
    FORWARD_OUTPUT = _key("taskmanager.forward-output").boolean_type().default_value(True).with_description(
        "streamkernel: whether a TaskManager process forwards its stdout/stderr to the client's.")
    SWITCH_INTERVAL = _key("streamkernel.taskmanager.switch-interval").duration_type() \
        .default_value(Duration.of_millis(1)).with_description(
            "streamkernel: the Python switch interval (sys.setswitchinterval) of a TaskManager process of the process "
            "and spark backends: how long a busy task thread keeps the GIL while a network thread waits for it. "
            "Python's 5 ms made every hop of a record batch and its credit between TaskManagers wait up to 5 ms.")
    WORKING_DIR = _key("streamkernel.taskmanager.working-dir").string_type().no_default_value().with_description(
        "streamkernel: the directory a cluster owns for its TaskManagers (each works in <dir>/<taskmanager id>; "
        "the cluster sets it); unset: each makes a temporary directory under io.tmp.dirs.")
    # Buffer debloating (Flink's keys; buffer sizes here count records, not bytes)
    BUFFER_DEBLOAT_ENABLED = _key("taskmanager.network.memory.buffer-debloat.enabled").boolean_type() \
        .default_value(False).with_description(
            "Whether a task with inputs shrinks the buffers its senders send so that its in-flight input is "
            "about buffer-debloat.target of its throughput (fast aligned checkpoints under backpressure). "
            "streamkernel counts a buffer in records, not bytes.")
    BUFFER_DEBLOAT_TARGET = _key("taskmanager.network.memory.buffer-debloat.target").duration_type() \
        .default_value(Duration.of_seconds(1)).with_range(1).with_description(
            "How long a task should take to process its in-flight input (the data its input channels can hold).")
    BUFFER_DEBLOAT_PERIOD = _key("taskmanager.network.memory.buffer-debloat.period").duration_type() \
        .default_value(Duration.of_millis(200)).with_range(1).with_description(
            "Time between two recalculations of the buffer size (checked between two input buffers).")
    BUFFER_DEBLOAT_SAMPLES = _key("taskmanager.network.memory.buffer-debloat.samples").int_type() \
        .default_value(20).with_range(1).with_description(
            "Recalculations the buffer size averages over (the exponential moving average's alpha is "
            "2 / (samples + 1)).")
    BUFFER_DEBLOAT_THRESHOLD_PERCENTAGES = _key("taskmanager.network.memory.buffer-debloat.threshold-percentages") \
        .int_type().default_value(25).with_range(0).with_description(
            "A new buffer size is announced to the senders only when it differs from the announced one by at "
            "least this percentage (or reaches the minimum or maximum).")
    MIN_MEMORY_SEGMENT_SIZE = _key("taskmanager.memory.min-segment-size").int_type().default_value(1) \
        .with_range(1).with_description(
            "The smallest buffer size that buffer debloating announces. streamkernel: in RECORDS (Flink: bytes, 256 b), "
            "at most taskmanager.network.batch-size.")


class NettyShuffleEnvironmentOptions:
    """The network stack between tasks (Flink's ``NettyShuffleEnvironmentOptions``): the buffers
    each input gate and result partition needs from its TaskManager's network memory
    (docs/memory.md, "Network memory"); records are batched per channel (a buffer holds a batch)."""

    NETWORK_BUFFERS_PER_CHANNEL = _key("taskmanager.network.memory.buffers-per-channel").int_type() \
        .default_value(2).with_range(0).with_deprecated_keys("taskmanager.network.credits-per-channel") \
        .with_description(
            "Exclusive buffers of each input channel (the credits a receiver grants its sender; each holds one "
            "batch). A gate needs channels x buffers-per-channel + 1 buffers of its TaskManager's network memory "
            "at deployment. Replaces streamkernel's taskmanager.network.credits-per-channel (deprecated).")
    NETWORK_EXTRA_BUFFERS_PER_GATE = _key("taskmanager.network.memory.floating-buffers-per-gate").int_type() \
        .default_value(8).with_range(0).with_description(
            "Floating buffers of each input gate, shared by its channels (streamkernel: split evenly among the "
            "channels as extra credits; Flink lends them to the channels with backlog).")
    BATCH_SIZE = _key("taskmanager.network.batch-size").int_type().default_value(1024).with_range(1) \
        .with_description("streamkernel: records per network batch (a batch is sent when full or on buffer timeout).")


class HeartbeatManagerOptions:
    """Flink's ``HeartbeatManagerOptions``: how lost TaskManagers are noticed."""

    HEARTBEAT_INTERVAL = _key("heartbeat.interval").duration_type().default_value(Duration.of_seconds(10)) \
        .with_range(1).with_description(
            "Time between heartbeats (a MiniCluster passes shorter ones: 100 ms local, 1 s for processes).")
    HEARTBEAT_TIMEOUT = _key("heartbeat.timeout").duration_type().default_value(Duration.of_seconds(50)) \
        .with_range(1).with_description(
            "Time without a heartbeat after which a TaskManager is lost (at least heartbeat.interval).")


class JobManagerOptions:
    """Flink's ``JobManagerOptions``."""

    SLOT_REQUEST_TIMEOUT = _key("slot.request.timeout").duration_type().default_value(Duration.of_seconds(30)) \
        .with_range(0).with_description(
            "How long a job waits for slots before failing. Flink's default is 5 min; streamkernel's 30 s, so "
            "that a notebook cell says soon that the cluster is too small.")
    RPC_PORT = _key("jobmanager.rpc.port").int_type().default_value(0).with_range(0, 65535).with_description(
        "Port of the JobManager's RPC listener for TaskManagers in other processes; 0 (streamkernel's "
        "default; Flink's is 6123): any free port.")
    BIND_HOST = _key("jobmanager.bind-host").string_type().no_default_value().with_description(
        "Address the JobManager's RPC listener binds to; unset: loopback (spark: the driver's address).")


class RpcOptions:
    """Flink's ``RpcOptions``."""

    ASK_TIMEOUT = _key("pekko.ask.timeout").duration_type().default_value(Duration.of_seconds(10)) \
        .with_deprecated_keys("akka.ask.timeout").with_range(1).with_description(
            "How long an RPC call to another process waits for its answer.")


class WebOptions:
    """Flink's ``WebOptions``: how much history the REST API and the cockpit keep, what the Web UI may do, and
    where Flink's Web UI is."""

    EXCEPTION_HISTORY_SIZE = _key("web.exception-history-size").int_type().default_value(16).with_range(0) \
        .with_description("Failures kept in a job's exception history.")
    CHECKPOINTS_HISTORY_SIZE = _key("web.checkpoints.history").int_type().default_value(10).with_range(1) \
        .with_description("Recent checkpoints kept in a job's checkpoint statistics.")
    DASHBOARD_JAR = _key("web.dashboard.jar").string_type().no_default_value().with_description(
        "streamkernel: the jar holding Flink's Web UI (its web/ folder: flink-dist-*.jar of apache-flink-libraries), "
        "served at / by the REST endpoint; unset: $FLINK_HOME/lib/flink-dist-*.jar, else the installed pyflink "
        "package's lib/flink-dist-*.jar, else / shows how to get it.")
    REFRESH_INTERVAL = _key("web.refresh-interval").long_type().default_value(3000).with_range(1) \
        .with_description("Milliseconds between two refreshes of the Web UI (sent in the REST API's /config).")
    SUBMIT_ENABLE = _key("web.submit.enable").boolean_type().default_value(True).with_description(
        "Whether jobs may be submitted through the REST API (and the Web UI shows its submit page).")
    CANCEL_ENABLE = _key("web.cancel.enable").boolean_type().default_value(True).with_description(
        "Whether jobs may be cancelled through the REST API (and the Web UI shows its cancel button).")


class MiniClusterOptions:
    """Flink's ``MiniClusterOptions``."""

    NUM_TASK_MANAGERS = _key("minicluster.number-of-taskmanagers").int_type().default_value(1).with_range(1) \
        .with_description("TaskManagers of a MiniCluster (and of env.execute()'s cluster when none runs).")
    MAX_TASKMANAGERS = _key("streamkernel.minicluster.max-taskmanagers").int_type().default_value(256) \
        .with_range(1).with_description("streamkernel: most TaskManagers of the local backend (in this process).")
    MAX_TASKMANAGER_PROCESSES = _key("streamkernel.minicluster.max-taskmanager-processes").int_type() \
        .no_default_value().with_range(1).with_description(
            "streamkernel: most TaskManager processes on this machine (process backend; spark on a local master); "
            "unset: 4 x os.cpu_count(), at least 4.")
    MAX_SLOTS_PER_TASKMANAGER = _key("streamkernel.minicluster.max-slots-per-taskmanager").int_type() \
        .default_value(256).with_range(1).with_description(
            "streamkernel: most task slots of one TaskManager (each slot's subtasks are threads of one process).")
    MAX_TOTAL_SLOTS = _key("streamkernel.minicluster.max-total-slots").int_type().default_value(1024) \
        .with_range(1).with_description("streamkernel: most task slots of a whole cluster.")


class BackendOptions:
    """streamkernel's own keys: where TaskManagers run (threads, processes, Spark tasks)."""

    BACKEND = _key("streamkernel.backend").enum_type(("local", "process", "spark")).no_default_value() \
        .with_description("Where TaskManagers run; unset: $STREAMKERNEL_BACKEND, else local.")
    REPLACE_LOST = _key("streamkernel.taskmanager.replace-lost").boolean_type().default_value(True) \
        .with_description("Whether a lost TaskManager in another process is replaced by a new one.")
    SPARK_EXECUTOR_WAIT = _key("taskmanager.spark.executor-registration-timeout").duration_type() \
        .default_value(Duration.of_seconds(30)).with_range(0).with_description(
            "How long the spark backend waits for executors to offer the slots it needs.")
    SPARK_MASTER = _key("spark.master").string_type().no_default_value().with_description(
        "Spark master of the spark backend's session (unset: a local master sized for the TaskManagers).")
    SPARK_TASK_MAX_FAILURES = _key("spark.task.maxFailures").int_type().default_value(8).with_range(1) \
        .with_description("Tries per TaskManager host under the default local master (Spark's default is 4).")
    SPARK_TASK_CPUS = _key("spark.task.cpus").int_type().default_value(1).with_range(1).with_description(
        "Cores per Spark task: a local[N] master hosts N // spark.task.cpus TaskManagers.")
