"""The configuration keys of checkpointing (Flink's ``CheckpointingOptions``) and how a
:class:`~streamkernel.datastream.checkpoint_config.CheckpointConfig` is written to and read
from them.

Each setting has its Flink 2.x key; where Flink 1.x spelled it differently, the 1.x key is
read as a fallback. Durations are written in Flink's notation (``'10 s'``, ``'10 min'``)
and read in any notation ``parse_duration_ms`` accepts (``'500 ms'``, ``'PT10S'``, ``'250'``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Dict, Mapping, Tuple

from streamkernel.common.config_options import parse_boolean
from streamkernel.common.configuration import parse_duration_ms
from streamkernel.common.time import Duration
from streamkernel.datastream.checkpoint_storage import (
    CHECKPOINT_DIR_KEY,
    CHECKPOINT_STORAGE_KEY,
    FileSystemCheckpointStorage,
    JobManagerCheckpointStorage,
)
from streamkernel.datastream.checkpointing_mode import CheckpointingMode
from streamkernel.datastream.externalized_checkpoint_retention import ExternalizedCheckpointRetention
from streamkernel.errors import IllegalConfigurationError, InvalidProgramError

if TYPE_CHECKING:
    from streamkernel.datastream.checkpoint_config import CheckpointConfig

__all__ = [
    "CHECKPOINTING_INTERVAL",
    "CHECKPOINTING_MODE",
    "CHECKPOINTING_TIMEOUT",
    "MIN_PAUSE_BETWEEN_CHECKPOINTS",
    "MAX_CONCURRENT_CHECKPOINTS",
    "TOLERABLE_FAILURE_NUMBER",
    "EXTERNALIZED_CHECKPOINT_RETENTION",
    "ENABLE_UNALIGNED",
    "ALIGNED_CHECKPOINT_TIMEOUT",
    "FORCE_UNALIGNED",
    "CHECKPOINT_STORAGE",
    "CHECKPOINTS_DIRECTORY",
    "checkpoint_config_to_configuration",
    "apply_checkpointing_options",
]

Keys = Tuple[str, ...]

CHECKPOINTING_INTERVAL: Keys = ("execution.checkpointing.interval",)
"""Keys of the checkpoint interval (a duration; absent means disabled)."""
CHECKPOINTING_MODE: Keys = ("execution.checkpointing.mode",)
"""Keys of the checkpointing mode (``EXACTLY_ONCE`` or ``AT_LEAST_ONCE``)."""
CHECKPOINTING_TIMEOUT: Keys = ("execution.checkpointing.timeout",)
"""Keys of the checkpoint timeout (a duration)."""
MIN_PAUSE_BETWEEN_CHECKPOINTS: Keys = ("execution.checkpointing.min-pause",)
"""Keys of the minimal pause between checkpoints (a duration)."""
MAX_CONCURRENT_CHECKPOINTS: Keys = ("execution.checkpointing.max-concurrent-checkpoints",)
"""Keys of the maximum number of concurrent checkpoints (an int)."""
TOLERABLE_FAILURE_NUMBER: Keys = ("execution.checkpointing.tolerable-failed-checkpoints",)
"""Keys of the number of tolerated consecutive checkpoint failures (an int)."""
EXTERNALIZED_CHECKPOINT_RETENTION: Keys = ("execution.checkpointing.externalized-checkpoint-retention",)
"""Keys of the externalized checkpoint retention (an ExternalizedCheckpointRetention name)."""
ENABLE_UNALIGNED: Keys = ("execution.checkpointing.unaligned.enabled", "execution.checkpointing.unaligned")
"""Keys of the unaligned checkpoints switch (``true``/``false``)."""
ALIGNED_CHECKPOINT_TIMEOUT: Keys = (
    "execution.checkpointing.aligned-checkpoint-timeout",
    "execution.checkpointing.alignment-timeout",
)
"""Keys of the aligned checkpoint timeout (a duration)."""
FORCE_UNALIGNED: Keys = ("execution.checkpointing.unaligned.forced",)
"""Keys of the forced unaligned checkpoints switch (``true``/``false``)."""
CHECKPOINT_STORAGE: Keys = (CHECKPOINT_STORAGE_KEY, "state.checkpoint-storage")
"""Keys of the checkpoint storage kind (``jobmanager`` or ``filesystem``)."""
CHECKPOINTS_DIRECTORY: Keys = (CHECKPOINT_DIR_KEY, "state.checkpoints.dir")
"""Keys of the checkpoint directory."""


def _format_ms(millis: int) -> str:
    return "0 ms" if millis == 0 else str(Duration.of_millis(millis))


def checkpoint_config_to_configuration(config: "CheckpointConfig") -> Dict[str, str]:
    """Every setting of ``config`` as 2.x keys; the interval only when checkpointing is on."""
    conf: Dict[str, str] = {}
    if config.is_checkpointing_enabled():
        conf[CHECKPOINTING_INTERVAL[0]] = _format_ms(config.get_checkpoint_interval())
    conf[CHECKPOINTING_MODE[0]] = config.get_checkpointing_mode().name
    conf[CHECKPOINTING_TIMEOUT[0]] = _format_ms(config.get_checkpoint_timeout())
    conf[MIN_PAUSE_BETWEEN_CHECKPOINTS[0]] = _format_ms(config.get_min_pause_between_checkpoints())
    conf[MAX_CONCURRENT_CHECKPOINTS[0]] = str(config.get_max_concurrent_checkpoints())
    conf[TOLERABLE_FAILURE_NUMBER[0]] = str(config.get_tolerable_checkpoint_failure_number())
    conf[EXTERNALIZED_CHECKPOINT_RETENTION[0]] = config.get_externalized_checkpoint_retention().name
    conf[ENABLE_UNALIGNED[0]] = "true" if config.is_unaligned_checkpoints_enabled() else "false"
    conf[ALIGNED_CHECKPOINT_TIMEOUT[0]] = _format_ms(
        config.get_aligned_checkpoint_timeout().to_milliseconds()
    )
    conf[FORCE_UNALIGNED[0]] = "true" if config.is_force_unaligned_checkpoints() else "false"
    storage = config.get_checkpoint_storage()
    if storage is not None:
        conf.update(storage.to_configuration())
    return conf


def _enum_parser(enum_type: Any) -> Callable[[str, str], Any]:
    def parse(text: str, key: str) -> Any:
        try:
            return enum_type[str(text).strip().upper()]
        except KeyError:
            raise IllegalConfigurationError(
                f"configuration {key!r}: expected one of "
                f"{', '.join(m.name for m in enum_type)}, got {text!r}"
            ) from None

    return parse


def parse_int(text: str, key: str) -> int:
    try:
        return int(str(text).strip())
    except ValueError:
        raise IllegalConfigurationError(
            f"configuration {key!r}: expected an integer, got {text!r}"
        ) from None


def apply_checkpointing_options(config: "CheckpointConfig", conf: Mapping[str, str]) -> None:
    """Set on ``config`` every checkpointing key present in ``conf`` (through its setters).

    A bad value raises :class:`IllegalConfigurationError` naming the key; keys applied
    before it stay applied (``CheckpointConfig.apply_configuration`` works on a copy).
    """
    settings: Tuple[Tuple[Any, Callable[[str, str], Any], Callable[[Any], object]], ...] = (
        (CHECKPOINTING_MODE, _enum_parser(CheckpointingMode), config.set_checkpointing_mode),
        (CHECKPOINTING_INTERVAL, parse_duration_ms, config.set_checkpoint_interval),
        (CHECKPOINTING_TIMEOUT, parse_duration_ms, config.set_checkpoint_timeout),
        (MIN_PAUSE_BETWEEN_CHECKPOINTS, parse_duration_ms, config.set_min_pause_between_checkpoints),
        (MAX_CONCURRENT_CHECKPOINTS, parse_int, config.set_max_concurrent_checkpoints),
        (TOLERABLE_FAILURE_NUMBER, parse_int, config.set_tolerable_checkpoint_failure_number),
        (EXTERNALIZED_CHECKPOINT_RETENTION, _enum_parser(ExternalizedCheckpointRetention),
         config.set_externalized_checkpoint_retention),
        (ENABLE_UNALIGNED, parse_boolean, config.enable_unaligned_checkpoints),
        (ALIGNED_CHECKPOINT_TIMEOUT, parse_duration_ms, config.set_aligned_checkpoint_timeout),
        (FORCE_UNALIGNED, parse_boolean, config.set_force_unaligned_checkpoints),
    )
    for keys, parse, setter in settings:
        key = next((k for k in keys if k in conf), None)
        if key is None:
            continue
        value = parse(conf[key], key)
        try:
            setter(value)
        except InvalidProgramError as error:
            raise IllegalConfigurationError(f"configuration {key!r}: {error}") from None
    _apply_storage(config, conf)


def _apply_storage(config: "CheckpointConfig", conf: Mapping[str, str]) -> None:
    storage_key = next((k for k in CHECKPOINT_STORAGE if k in conf), None)
    dir_key = next((k for k in CHECKPOINTS_DIRECTORY if k in conf), None)
    directory = conf[dir_key] if dir_key else None
    kind = str(conf[storage_key]).strip().lower() if storage_key else None
    if kind is None and directory is None:
        return
    if storage_key is not None and kind not in ("jobmanager", "filesystem"):
        raise IllegalConfigurationError(
            f"configuration {storage_key!r}: unknown checkpoint storage {conf[storage_key]!r}; "
            "use 'jobmanager' or 'filesystem'"
        )
    if kind != "jobmanager" and not directory:
        raise IllegalConfigurationError(
            f"configuration {storage_key!r} is 'filesystem' but no checkpoint directory is "
            f"set: add {CHECKPOINT_DIR_KEY!r}"
        )
    try:
        if kind == "jobmanager":
            config.set_checkpoint_storage(JobManagerCheckpointStorage(directory or None))
        else:
            config.set_checkpoint_storage(FileSystemCheckpointStorage(directory))
    except InvalidProgramError as error:
        raise IllegalConfigurationError(f"configuration {dir_key!r}: {error}") from None
