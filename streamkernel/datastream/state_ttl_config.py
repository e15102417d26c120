"""State time-to-live: when keyed state values expire and how expired values are cleaned up.

:class:`StateTtlConfig` is PyFlink's class of the same name (``pyflink.datastream.state``,
re-exported from :mod:`streamkernel.datastream.state`). Build one with
``StateTtlConfig.new_builder(ttl)`` and attach it with
``descriptor.enable_time_to_live(ttl_config)``::

    ttl_config = (StateTtlConfig.new_builder(Time.seconds(10))
                  .set_update_type(StateTtlConfig.UpdateType.OnReadAndWrite)
                  .set_state_visibility(StateTtlConfig.StateVisibility.NeverReturnExpired)
                  .build())

The TTL may be a ``Time``, a ``Duration``, a ``datetime.timedelta`` or an int number of
milliseconds; it must be positive, as in Flink.
"""

from __future__ import annotations

from abc import ABC
from enum import Enum
from typing import Any, Dict, Optional

from streamkernel.common.time import Time
from streamkernel.common.time import to_millis
from streamkernel.errors import InvalidProgramError

__all__ = ["StateTtlConfig"]

class StateTtlConfig:
    """Configuration of state time-to-live (TTL): how long a state value lives after its last update.

    Create with :meth:`new_builder`. A value whose TTL has passed is expired: depending on
    :class:`StateVisibility` it is no longer returned, and the cleanup strategies decide when
    it is removed from storage.
    """

    class UpdateType(Enum):
        """When the last-access timestamp of a value (which prolongs its TTL) is updated."""

        Disabled = 0
        """TTL is disabled: state does not expire."""
        OnCreateAndWrite = 1
        """The timestamp is set when the value is created and on every write."""
        OnReadAndWrite = 2
        """Like ``OnCreateAndWrite``, and also on every read."""

    class StateVisibility(Enum):
        """Whether an expired value that is not yet cleaned up may still be returned."""

        ReturnExpiredIfNotCleanedUp = 0
        """Return an expired value if it has not been cleaned up yet."""
        NeverReturnExpired = 1
        """Never return an expired value."""

    class TtlTimeCharacteristic(Enum):
        """The time scale TTL is measured in."""

        ProcessingTime = 0
        """Processing time (the machine clock)."""

    def __init__(
        self,
        update_type: "StateTtlConfig.UpdateType",
        state_visibility: "StateTtlConfig.StateVisibility",
        ttl_time_characteristic: "StateTtlConfig.TtlTimeCharacteristic",
        ttl: Any,
        cleanup_strategies: "StateTtlConfig.CleanupStrategies",
    ) -> None:
        ttl_ms = to_millis(ttl, "ttl")
        if ttl_ms <= 0:
            raise InvalidProgramError(f"StateTtlConfig: ttl must be positive, got {ttl_ms} ms")
        self._update_type = update_type
        self._state_visibility = state_visibility
        self._ttl_time_characteristic = ttl_time_characteristic
        self._ttl = ttl
        self._ttl_ms = ttl_ms
        self._cleanup_strategies = cleanup_strategies

    @staticmethod
    def new_builder(ttl: Any) -> "StateTtlConfig.Builder":
        """Start building a TTL configuration with the given ``ttl`` (Time, Duration or ms)."""
        return StateTtlConfig.Builder(ttl)

    def get_update_type(self) -> "StateTtlConfig.UpdateType":
        """When the last-access timestamp is updated."""
        return self._update_type

    def get_state_visibility(self) -> "StateTtlConfig.StateVisibility":
        """Whether expired values may be returned."""
        return self._state_visibility

    def get_ttl(self) -> Any:
        """The time-to-live, as it was given to the builder (Time, Duration or ms)."""
        return self._ttl

    def get_ttl_millis(self) -> int:
        """The time-to-live in milliseconds (a streamkernel extra for the state backends)."""
        return self._ttl_ms

    def get_ttl_time_characteristic(self) -> "StateTtlConfig.TtlTimeCharacteristic":
        """The time scale of the TTL."""
        return self._ttl_time_characteristic

    def is_enabled(self) -> bool:
        """True unless the update type is ``UpdateType.Disabled``."""
        return self._update_type is not StateTtlConfig.UpdateType.Disabled

    def get_cleanup_strategies(self) -> "StateTtlConfig.CleanupStrategies":
        """The configured cleanup strategies of expired values."""
        return self._cleanup_strategies

    def __repr__(self) -> str:
        return (
            f"StateTtlConfig<update_type={self._update_type}, "
            f"state_visibility={self._state_visibility}, "
            f"ttl_time_characteristic={self._ttl_time_characteristic}, ttl={self._ttl_ms} ms>"
        )

    class Builder:
        """Builder of a :class:`StateTtlConfig`; every setter returns the builder."""

        def __init__(self, ttl: Any) -> None:
            self._ttl = ttl
            self._update_type = StateTtlConfig.UpdateType.OnCreateAndWrite
            self._state_visibility = StateTtlConfig.StateVisibility.NeverReturnExpired
            self._ttl_time_characteristic = StateTtlConfig.TtlTimeCharacteristic.ProcessingTime
            self._is_cleanup_in_background = True
            self._strategies: Dict[Any, Any] = {}

        def set_update_type(self, update_type: "StateTtlConfig.UpdateType") -> "StateTtlConfig.Builder":
            """Set when the last-access timestamp (which prolongs the TTL) is updated."""
            _check_enum(update_type, StateTtlConfig.UpdateType, "update_type")
            self._update_type = update_type
            return self

        def update_ttl_on_create_and_write(self) -> "StateTtlConfig.Builder":
            """Shortcut for ``set_update_type(UpdateType.OnCreateAndWrite)``."""
            return self.set_update_type(StateTtlConfig.UpdateType.OnCreateAndWrite)

        def update_ttl_on_read_and_write(self) -> "StateTtlConfig.Builder":
            """Shortcut for ``set_update_type(UpdateType.OnReadAndWrite)``."""
            return self.set_update_type(StateTtlConfig.UpdateType.OnReadAndWrite)

        def set_state_visibility(
            self, state_visibility: "StateTtlConfig.StateVisibility"
        ) -> "StateTtlConfig.Builder":
            """Set whether expired values that are not cleaned up yet may be returned."""
            _check_enum(state_visibility, StateTtlConfig.StateVisibility, "state_visibility")
            self._state_visibility = state_visibility
            return self

        def return_expired_if_not_cleaned_up(self) -> "StateTtlConfig.Builder":
            """Shortcut for ``set_state_visibility(StateVisibility.ReturnExpiredIfNotCleanedUp)``."""
            return self.set_state_visibility(
                StateTtlConfig.StateVisibility.ReturnExpiredIfNotCleanedUp
            )

        def never_return_expired(self) -> "StateTtlConfig.Builder":
            """Shortcut for ``set_state_visibility(StateVisibility.NeverReturnExpired)``."""
            return self.set_state_visibility(StateTtlConfig.StateVisibility.NeverReturnExpired)

        def set_ttl_time_characteristic(
            self, ttl_time_characteristic: "StateTtlConfig.TtlTimeCharacteristic"
        ) -> "StateTtlConfig.Builder":
            """Set the time scale of the TTL (only processing time exists)."""
            _check_enum(
                ttl_time_characteristic,
                StateTtlConfig.TtlTimeCharacteristic,
                "ttl_time_characteristic",
            )
            self._ttl_time_characteristic = ttl_time_characteristic
            return self

        def use_processing_time(self) -> "StateTtlConfig.Builder":
            """Shortcut for ``set_ttl_time_characteristic(TtlTimeCharacteristic.ProcessingTime)``."""
            return self.set_ttl_time_characteristic(
                StateTtlConfig.TtlTimeCharacteristic.ProcessingTime
            )

        def cleanup_full_snapshot(self) -> "StateTtlConfig.Builder":
            """Drop expired values when a full snapshot (checkpoint) is taken."""
            strategies = StateTtlConfig.CleanupStrategies
            self._strategies[strategies.Strategies.FULL_STATE_SCAN_SNAPSHOT] = (
                strategies.EMPTY_STRATEGY
            )
            return self

        def cleanup_incrementally(
            self, cleanup_size: int, run_cleanup_for_every_record: bool
        ) -> "StateTtlConfig.Builder":
            """Check ``cleanup_size`` keys for expiry on every state access (and per record if asked)."""
            strategies = StateTtlConfig.CleanupStrategies
            self._strategies[strategies.Strategies.INCREMENTAL_CLEANUP] = (
                strategies.IncrementalCleanupStrategy(cleanup_size, run_cleanup_for_every_record)
            )
            return self

        def cleanup_in_rocksdb_compact_filter(
            self, query_time_after_num_entries: int, periodic_compaction_time: Any = None
        ) -> "StateTtlConfig.Builder":
            """Drop expired values while RocksDB compacts (the ``rocksdb`` backend only).

            ``periodic_compaction_time`` defaults to 30 days; 0 turns periodic compaction off.
            """
            strategies = StateTtlConfig.CleanupStrategies
            self._strategies[strategies.Strategies.ROCKSDB_COMPACTION_FILTER] = (
                strategies.RocksdbCompactFilterCleanupStrategy(
                    query_time_after_num_entries, periodic_compaction_time
                )
            )
            return self

        def disable_cleanup_in_background(self) -> "StateTtlConfig.Builder":
            """Turn off the default background cleanup (explicitly configured ones stay)."""
            self._is_cleanup_in_background = False
            return self

        def set_ttl(self, ttl: Any) -> "StateTtlConfig.Builder":
            """Replace the time-to-live (Time, Duration or ms)."""
            self._ttl = ttl
            return self

        def build(self) -> "StateTtlConfig":
            """Build the :class:`StateTtlConfig`; raises if the TTL is not positive."""
            return StateTtlConfig(
                self._update_type,
                self._state_visibility,
                self._ttl_time_characteristic,
                self._ttl,
                StateTtlConfig.CleanupStrategies(
                    dict(self._strategies), self._is_cleanup_in_background
                ),
            )

    class CleanupStrategies:
        """When expired values are removed from storage.

        Expired values are always removed on an explicit read that finds them expired; the
        strategies here add cleanup on full snapshots, incrementally on access, or during
        RocksDB compaction.
        """

        class Strategies(Enum):
            """The kinds of cleanup strategy."""

            FULL_STATE_SCAN_SNAPSHOT = 0
            INCREMENTAL_CLEANUP = 1
            ROCKSDB_COMPACTION_FILTER = 2

        class CleanupStrategy(ABC):
            """Base class of the configuration of one cleanup strategy."""

        class EmptyCleanupStrategy(CleanupStrategy):
            """A strategy that needs no settings (cleanup on full snapshot)."""

        class IncrementalCleanupStrategy(CleanupStrategy):
            """Check a number of keys for expiry on every state access."""

            def __init__(self, cleanup_size: int, run_cleanup_for_every_record: bool) -> None:
                if isinstance(cleanup_size, bool) or not isinstance(cleanup_size, int) \
                        or cleanup_size <= 0:
                    raise InvalidProgramError(
                        "cleanup_incrementally: cleanup_size (keys checked per state access) "
                        f"must be a positive int, got {cleanup_size!r}"
                    )
                self._cleanup_size = cleanup_size
                self._run_cleanup_for_every_record = bool(run_cleanup_for_every_record)

            def get_cleanup_size(self) -> int:
                """How many keys are checked per state access."""
                return self._cleanup_size

            def run_cleanup_for_every_record(self) -> bool:
                """Whether a cleanup step also runs for every processed record."""
                return self._run_cleanup_for_every_record

        class RocksdbCompactFilterCleanupStrategy(CleanupStrategy):
            """Remove expired values in a RocksDB compaction filter."""

            def __init__(
                self, query_time_after_num_entries: int, periodic_compaction_time: Any = None
            ) -> None:
                if isinstance(query_time_after_num_entries, bool) or not isinstance(
                    query_time_after_num_entries, int
                ) or query_time_after_num_entries < 0:
                    raise InvalidProgramError(
                        "cleanup_in_rocksdb_compact_filter: query_time_after_num_entries must "
                        f"be a non-negative int, got {query_time_after_num_entries!r}"
                    )
                if periodic_compaction_time is None:
                    periodic_compaction_time = Time.days(30)
                millis = to_millis(periodic_compaction_time, "periodic_compaction_time")
                if millis < 0:
                    raise InvalidProgramError(
                        "cleanup_in_rocksdb_compact_filter: periodic_compaction_time must not "
                        f"be negative, got {millis} ms"
                    )
                self._query_time_after_num_entries = query_time_after_num_entries
                self._periodic_compaction_time = periodic_compaction_time

            def get_query_time_after_num_entries(self) -> int:
                """How many entries the filter processes before it reads the clock again."""
                return self._query_time_after_num_entries

            def get_periodic_compaction_time(self) -> Any:
                """How old a file may get before it is compacted (as given; default ``Time.days(30)``)."""
                return self._periodic_compaction_time

        EMPTY_STRATEGY: "StateTtlConfig.CleanupStrategies.EmptyCleanupStrategy"

        def __init__(self, strategies: Dict[Any, Any], is_cleanup_in_background: bool) -> None:
            self._strategies = strategies
            self._is_cleanup_in_background = is_cleanup_in_background

        def is_cleanup_in_background(self) -> bool:
            """Whether the backend's default background cleanup is on."""
            return self._is_cleanup_in_background

        def in_full_snapshot(self) -> bool:
            """Whether expired values are dropped from full snapshots."""
            return StateTtlConfig.CleanupStrategies.Strategies.FULL_STATE_SCAN_SNAPSHOT \
                in self._strategies

        def get_incremental_cleanup_strategy(
            self,
        ) -> Optional["StateTtlConfig.CleanupStrategies.IncrementalCleanupStrategy"]:
            """The incremental strategy; with background cleanup on, defaults to (5, False)."""
            strategies = StateTtlConfig.CleanupStrategies
            default = (
                strategies.IncrementalCleanupStrategy(5, False)
                if self._is_cleanup_in_background
                else None
            )
            return self._strategies.get(strategies.Strategies.INCREMENTAL_CLEANUP, default)

        def get_rocksdb_compact_filter_cleanup_strategy(
            self,
        ) -> Optional["StateTtlConfig.CleanupStrategies.RocksdbCompactFilterCleanupStrategy"]:
            """The RocksDB compaction strategy; with background cleanup on, defaults to (1000)."""
            strategies = StateTtlConfig.CleanupStrategies
            default = (
                strategies.RocksdbCompactFilterCleanupStrategy(1000)
                if self._is_cleanup_in_background
                else None
            )
            return self._strategies.get(strategies.Strategies.ROCKSDB_COMPACTION_FILTER, default)


StateTtlConfig.CleanupStrategies.EMPTY_STRATEGY = (
    StateTtlConfig.CleanupStrategies.EmptyCleanupStrategy()
)


def _check_enum(value: Any, enum_type: type, argument: str) -> None:
    if not isinstance(value, enum_type):
        names = ", ".join(f"{enum_type.__qualname__}.{m.name}" for m in enum_type)  # type: ignore[attr-defined]
        raise InvalidProgramError(f"{argument} must be one of {names}, got {value!r}")
