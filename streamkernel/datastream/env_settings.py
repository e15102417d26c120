"""The job-wide settings of a StreamExecutionEnvironment, and their configuration keys.

Split from the environment so that one module holds one concept: here, what a job is
configured with (parallelism, max parallelism, checkpointing, state backend, restart
strategy, buffer timeout, chaining, runtime mode, Python dependencies) and how PyFlink
2.x configuration keys map onto it. Both ways of configuring work and agree: keys in a
``Configuration`` (``restart-strategy.type: fixed-delay``) and the methods, 1.x ones
included (``set_restart_strategy``, ``set_state_backend``).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Mapping, Optional

from streamkernel.common.configuration import Configuration, parse_duration_ms
from streamkernel.common.execution_config import ExecutionConfig
from streamkernel.common.restart_strategy import RestartStrategyConfiguration, restart_strategy_from_configuration
from streamkernel.datastream.checkpoint_config import CheckpointConfig
from streamkernel.datastream.checkpointing_mode import CheckpointingMode
from streamkernel.datastream.execution_mode import RuntimeExecutionMode
from streamkernel.datastream.state_backend import StateBackend, state_backend_from_name
from streamkernel.errors import IllegalConfigurationError, InvalidArgumentTypeError, InvalidProgramError
from streamkernel.graph.keygroups import UPPER_BOUND_MAX_PARALLELISM

__all__ = ["EnvSettings", "DEFAULT_BUFFER_TIMEOUT_MS", "CONTEXT_CONFIGURATION_ENV", "context_configuration"]

DEFAULT_BUFFER_TIMEOUT_MS = 100

#: Environment variable holding a JSON object of configuration keys every environment of
#: the process starts from, before its own (``streamkernel run -p N -D k=v`` sets it, as
#: ``flink run`` configures the program's context environment).
CONTEXT_CONFIGURATION_ENV = "STREAMKERNEL_CONFIGURATION"

# Flink 2.x key first, then the 1.x spellings still found in the wild.
_PARALLELISM = ("parallelism.default",)
_MAX_PARALLELISM = ("pipeline.max-parallelism",)
_BUFFER_TIMEOUT = ("execution.buffer-timeout.interval", "execution.buffer-timeout")
_CHAINING = ("pipeline.operator-chaining.enabled", "pipeline.operator-chaining")
_RUNTIME_MODE = ("execution.runtime-mode",)
_STATE_BACKEND = ("state.backend.type", "state.backend")
_RESTART = ("restart-strategy.type", "restart-strategy")
_SAVEPOINT_DIR = ("execution.checkpointing.savepoint-dir", "state.savepoints.dir")
_WATERMARK_INTERVAL = ("pipeline.auto-watermark-interval",)


def context_configuration() -> dict[str, str]:
    """The keys of ``$STREAMKERNEL_CONFIGURATION`` (empty when unset); a clear error when it is not a JSON object."""
    text = os.environ.get(CONTEXT_CONFIGURATION_ENV, "").strip()
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError as error:
        raise IllegalConfigurationError(f"${CONTEXT_CONFIGURATION_ENV}: not JSON ({error}): {text[:200]!r}") from None
    if not isinstance(value, dict):
        raise IllegalConfigurationError(f"${CONTEXT_CONFIGURATION_ENV}: expected a JSON object of configuration keys, "
                                        f"got {text[:200]!r}")
    return {str(k): str(v) for k, v in value.items()}


def _first(conf: Mapping[str, str], keys: tuple[str, ...]) -> Optional[str]:
    for key in keys:
        if key in conf:
            return conf[key]
    return None


def _as_bool(key: str, value: str) -> bool:
    lowered = value.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    raise IllegalConfigurationError(f"configuration {key!r}: expected true or false, got {value!r}")


def _as_int(key: str, value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise IllegalConfigurationError(f"configuration {key!r}: expected an integer, got {value!r}") from None


class EnvSettings:
    """Job-wide settings with PyFlink's getters and setters (base of the environment)."""

    def __init__(self, configuration: Optional[Configuration] = None) -> None:
        self._configuration = Configuration()
        self._config = ExecutionConfig()
        self._checkpoint_config = CheckpointConfig()
        self._state_backend: Optional[StateBackend] = None
        self._chaining_enabled = True
        self._buffer_timeout = DEFAULT_BUFFER_TIMEOUT_MS
        self._runtime_mode = RuntimeExecutionMode.STREAMING
        self._default_local_parallelism = os.cpu_count() or 1
        self._default_savepoint_directory: Optional[str] = None
        self._changelog_enabled = False
        self._slot_sharing_groups: dict[str, Any] = {}
        self._cached_files: list[tuple[str, str, bool]] = []
        self._python_files: list[str] = []
        self._jars: list[str] = []
        context = context_configuration()
        if context:
            self.configure(Configuration.from_dict(context))
        if configuration is not None:
            self.configure(configuration)

    # ----------------------------------------------------------- configuration
    def configure(self, configuration: Configuration) -> "EnvSettings":
        """Apply Flink configuration keys (2.x names, 1.x names accepted) to this environment."""
        conf = configuration.to_dict() if hasattr(configuration, "to_dict") else dict(configuration)
        self._configuration.add_all(Configuration.from_dict(conf) if hasattr(Configuration, "from_dict")
                                    else configuration)
        if (value := _first(conf, _PARALLELISM)) is not None:
            self.set_parallelism(_as_int(_PARALLELISM[0], value))
        if (value := _first(conf, _MAX_PARALLELISM)) is not None:
            self.set_max_parallelism(_as_int(_MAX_PARALLELISM[0], value))
        if (value := _first(conf, _BUFFER_TIMEOUT)) is not None:
            self.set_buffer_timeout(-1 if value.strip() == "-1" else parse_duration_ms(value))
        if (value := conf.get("execution.buffer-timeout.enabled")) is not None and not _as_bool(
                "execution.buffer-timeout.enabled", value):
            self.set_buffer_timeout(-1)
        if (value := _first(conf, _CHAINING)) is not None:
            self._chaining_enabled = _as_bool(_CHAINING[0], value)
        if (value := _first(conf, _RUNTIME_MODE)) is not None:
            try:
                self._runtime_mode = RuntimeExecutionMode[value.strip().upper()]
            except KeyError:
                raise IllegalConfigurationError(
                    f"configuration 'execution.runtime-mode': expected STREAMING, BATCH or AUTOMATIC, got {value!r}"
                ) from None
        if (value := _first(conf, _STATE_BACKEND)) is not None:
            self._state_backend = state_backend_from_name(value)
        if _first(conf, _RESTART) is not None:
            self._config.set_restart_strategy(restart_strategy_from_configuration(conf))
        if (value := _first(conf, _SAVEPOINT_DIR)) is not None:
            self._default_savepoint_directory = value
        if (value := _first(conf, _WATERMARK_INTERVAL)) is not None:
            self._config.set_auto_watermark_interval(parse_duration_ms(value))
        self._checkpoint_config.apply_configuration(conf)
        return self

    def to_configuration_dict(self) -> dict[str, str]:
        """Every setting as Flink 2.x configuration keys (what a job is submitted with)."""
        conf = dict(self._configuration.to_dict())
        conf.update(self._config.to_configuration())  # global job parameters, object reuse ...
        conf["parallelism.default"] = str(self.get_parallelism())
        if self.get_max_parallelism() > 0:
            conf["pipeline.max-parallelism"] = str(self.get_max_parallelism())
        if self._buffer_timeout < 0:  # Flink 2: flush only when full is a switch, not a negative duration
            conf["execution.buffer-timeout.enabled"] = "false"
            for key in _BUFFER_TIMEOUT:
                conf.pop(key, None)
        else:
            conf["execution.buffer-timeout.enabled"] = "true"
            conf["execution.buffer-timeout.interval"] = f"{self._buffer_timeout} ms"
        conf["pipeline.operator-chaining.enabled"] = str(self._chaining_enabled).lower()
        conf["execution.runtime-mode"] = self._runtime_mode.name
        conf["pipeline.auto-watermark-interval"] = str(self._config.get_auto_watermark_interval())
        if self._state_backend is not None:  # its own keys (RocksDB: localdir, options); 1.x storage keys aside
            conf.update((k, v) for k, v in self._state_backend.to_configuration().items() if k.startswith("state.backend"))
        restart_strategy = self._config.get_restart_strategy()
        if restart_strategy is not None:
            conf.update(restart_strategy.to_configuration())
        if self._default_savepoint_directory is not None:
            conf["execution.checkpointing.savepoint-dir"] = self._default_savepoint_directory
        conf.update(self._checkpoint_config.to_configuration())
        return conf

    def get_config(self) -> ExecutionConfig:
        """The ExecutionConfig (parallelism, auto watermark interval, job parameters ...)."""
        return self._config

    # ------------------------------------------------------------- parallelism
    def set_parallelism(self, parallelism: int) -> "EnvSettings":
        """The default parallelism of operators created from now on (Flink semantics)."""
        if isinstance(parallelism, bool) or not isinstance(parallelism, int):
            raise InvalidArgumentTypeError(
                f"set_parallelism: parallelism must be an int in 1..{UPPER_BOUND_MAX_PARALLELISM}, got "
                f"{type(parallelism).__name__}: {parallelism!r}")
        if parallelism == ExecutionConfig.PARALLELISM_DEFAULT:  # Flink: back to the default parallelism
            self._config.set_parallelism(parallelism)
            return self
        if not 0 < parallelism <= UPPER_BOUND_MAX_PARALLELISM:
            flink = ("Parallelism must be at least one, or ExecutionConfig.PARALLELISM_DEFAULT (use system "
                     "default). " if parallelism < 1 else "")
            raise InvalidProgramError(
                f"{flink}set_parallelism: parallelism must be an int in 1..{UPPER_BOUND_MAX_PARALLELISM} (or -1 "
                f"for the default), got {parallelism!r}")
        max_par = self.get_max_parallelism()
        if max_par > 0 and parallelism > max_par:
            raise InvalidProgramError(
                f"set_parallelism: parallelism {parallelism} exceeds the environment's max parallelism {max_par}")
        self._config.set_parallelism(parallelism)
        return self

    def get_parallelism(self) -> int:
        """The default parallelism: set explicitly, else the number of CPU cores (local mode)."""
        parallelism = self._config.get_parallelism()
        return parallelism if parallelism > 0 else self._default_local_parallelism

    def set_max_parallelism(self, max_parallelism: int) -> "EnvSettings":
        """The number of key groups: the upper limit for rescaling keyed state (1..32768)."""
        if (isinstance(max_parallelism, bool) or not isinstance(max_parallelism, int)
                or not 0 < max_parallelism <= UPPER_BOUND_MAX_PARALLELISM):
            raise (InvalidProgramError if isinstance(max_parallelism, int) else InvalidArgumentTypeError)(
                f"maxParallelism is out of bounds 0 < maxParallelism <= {UPPER_BOUND_MAX_PARALLELISM}. Found: "
                f"{max_parallelism!r}. set_max_parallelism: max_parallelism must be an int in "
                f"1..{UPPER_BOUND_MAX_PARALLELISM}")
        if self._config.get_parallelism() > max_parallelism:
            raise InvalidProgramError(
                f"set_max_parallelism: max parallelism {max_parallelism} is below the environment's "
                f"parallelism {self._config.get_parallelism()}")
        self._config.set_max_parallelism(max_parallelism)
        return self

    def get_max_parallelism(self) -> int:
        """The max parallelism, or -1 when not set (each operator then derives its own)."""
        return self._config.get_max_parallelism()

    def set_default_local_parallelism(self, parallelism: int) -> "EnvSettings":
        """The parallelism used when none is set (default: the number of CPU cores)."""
        if isinstance(parallelism, bool) or not isinstance(parallelism, int) or parallelism < 1:
            raise InvalidProgramError(f"set_default_local_parallelism: expected an int >= 1, got {parallelism!r}")
        self._default_local_parallelism = parallelism
        return self

    def get_default_local_parallelism(self) -> int:
        """The parallelism used when none is set."""
        return self._default_local_parallelism

    def set_runtime_mode(self, execution_mode: RuntimeExecutionMode) -> "EnvSettings":
        """STREAMING (default), BATCH (bounded sources only: keyed inputs sorted by key) or AUTOMATIC."""
        if not isinstance(execution_mode, RuntimeExecutionMode):
            raise InvalidProgramError(f"set_runtime_mode: expected a RuntimeExecutionMode, got {execution_mode!r}")
        self._runtime_mode = execution_mode
        return self

    # ------------------------------------------------- network and chaining
    def set_buffer_timeout(self, timeout_millis: int) -> "EnvSettings":
        """Max ms a network buffer waits before it is flushed: >0 periodic, 0 every record, -1 only when full."""
        if isinstance(timeout_millis, bool) or not isinstance(timeout_millis, int) or timeout_millis < -1:
            raise InvalidProgramError(f"set_buffer_timeout: timeout_millis must be an int >= -1, got {timeout_millis!r}")
        self._buffer_timeout = timeout_millis
        return self

    def get_buffer_timeout(self) -> int:
        """The buffer timeout in ms (default 100)."""
        return self._buffer_timeout

    def disable_operator_chaining(self) -> "EnvSettings":
        """Run every operator in a task of its own (no operator chaining)."""
        self._chaining_enabled = False
        return self

    def is_chaining_enabled(self) -> bool:
        """Whether operators are chained into tasks (default True)."""
        return self._chaining_enabled

    def is_chaining_of_operators_with_different_max_parallelism_enabled(self) -> bool:
        """Flink's default (True): max parallelism does not break chains."""
        return True

    def register_slot_sharing_group(self, slot_sharing_group: Any) -> "EnvSettings":
        """Register a SlotSharingGroup (with resources) so operators can refer to it by name."""
        self._slot_sharing_groups[slot_sharing_group.get_name()] = slot_sharing_group
        return self

    # ----------------------------------------------------------- checkpointing
    def enable_checkpointing(self, interval: int, mode: Optional[CheckpointingMode] = None) -> "EnvSettings":
        """Checkpoint every ``interval`` ms, EXACTLY_ONCE unless ``mode`` says AT_LEAST_ONCE."""
        self._checkpoint_config.set_checkpoint_interval(interval)
        if mode is not None:
            self._checkpoint_config.set_checkpointing_mode(mode)
        return self

    def get_checkpoint_config(self) -> CheckpointConfig:
        """The checkpoint settings (interval, mode, timeout, pauses, retention ...)."""
        return self._checkpoint_config

    def get_checkpoint_interval(self) -> int:
        """The checkpoint interval in ms, or -1 when checkpointing is disabled."""
        return self._checkpoint_config.get_checkpoint_interval()

    def get_checkpointing_mode(self) -> CheckpointingMode:
        """EXACTLY_ONCE or AT_LEAST_ONCE."""
        return self._checkpoint_config.get_checkpointing_mode()

    def get_checkpointing_consistency_mode(self) -> CheckpointingMode:
        """PyFlink 2.x name of :meth:`get_checkpointing_mode`."""
        return self.get_checkpointing_mode()

    def is_unaligned_checkpoints_enabled(self) -> bool:
        """Whether unaligned checkpoints are enabled."""
        return self._checkpoint_config.is_unaligned_checkpoints_enabled()

    def is_force_unaligned_checkpoints(self) -> bool:
        """Whether unaligned checkpoints are forced."""
        return self._checkpoint_config.is_force_unaligned_checkpoints()

    def set_state_backend(self, state_backend: StateBackend) -> "EnvSettings":
        """Where keyed state lives: HashMapStateBackend (memory) or EmbeddedRocksDBStateBackend (disk)."""
        if not isinstance(state_backend, StateBackend):
            raise InvalidProgramError(f"set_state_backend: expected a StateBackend, got {type(state_backend).__name__}")
        self._state_backend = state_backend
        return self

    def get_state_backend(self) -> Optional[StateBackend]:
        """The state backend set, or None for the default (hashmap)."""
        return self._state_backend

    def set_restart_strategy(self, restart_strategy_configuration: RestartStrategyConfiguration) -> None:
        """The restart strategy (PyFlink 1.x API; 2.x uses the restart-strategy.* keys).

        Kept in the ExecutionConfig, so ``env.get_config().set_restart_strategy`` agrees.
        """
        self._config.set_restart_strategy(restart_strategy_configuration)

    def get_restart_strategy(self) -> Optional[RestartStrategyConfiguration]:
        """The restart strategy set, or None for the default."""
        return self._config.get_restart_strategy()

    def set_default_savepoint_directory(self, directory: str) -> "EnvSettings":
        """Where savepoints go when no directory is given."""
        self._default_savepoint_directory = os.fspath(directory)
        return self

    def get_default_savepoint_directory(self) -> Optional[str]:
        """The default savepoint directory, or None."""
        return self._default_savepoint_directory

    def enable_changelog_state_backend(self, enabled: bool) -> "EnvSettings":
        """Recorded for compatibility; streamkernel has no changelog state backend."""
        self._changelog_enabled = bool(enabled)
        return self

    def is_changelog_state_backend_enabled(self) -> bool:
        """Whether enable_changelog_state_backend(True) was called."""
        return self._changelog_enabled

    # ------------------------------------------------------ Python dependencies
    def add_python_file(self, file_path: str) -> None:
        """Make a .py file or a directory importable by user functions (adds it to sys.path)."""
        path = os.path.abspath(os.fspath(file_path))
        entry = os.path.dirname(path) if os.path.isfile(path) else path
        if entry not in sys.path:
            sys.path.append(entry)
        self._python_files.append(path)

    def add_python_archive(self, archive_path: str, target_dir: Optional[str] = None) -> None:
        """Recorded for compatibility: TaskManagers share this Python environment."""
        self._python_files.append(os.fspath(archive_path))

    def set_python_executable(self, python_exec: str) -> None:
        """Recorded for compatibility: TaskManagers run with this interpreter."""
        self._configuration.set_string("python.executable", python_exec)

    def set_python_requirements(self, requirements_file_path: str, requirements_cache_dir: Optional[str] = None) -> None:
        """Recorded for compatibility: install requirements into the environment yourself."""
        self._configuration.set_string("python.requirements", os.fspath(requirements_file_path))

    def register_cached_file(self, file_path: str, name: str, executable: bool = False) -> None:
        """Register a file under ``name`` for user functions (readable from the local path)."""
        self._cached_files.append((os.fspath(file_path), name, executable))

    def add_jars(self, *jars_path: str) -> None:
        """Recorded and ignored: streamkernel runs no JVM code."""
        self._jars.extend(jars_path)

    def add_classpaths(self, *classpaths: str) -> None:
        """Recorded and ignored: streamkernel runs no JVM code."""
        self._jars.extend(classpaths)
