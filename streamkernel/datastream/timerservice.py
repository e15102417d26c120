"""TimerService: the clocks and timers a keyed process function sees, as ``pyflink.datastream.timerservice``."""

from __future__ import annotations

from abc import ABC, abstractmethod

__all__ = ["TimerService"]


class TimerService(ABC):
    """Interface for reading the current time and registering timers.

    Timers are scoped to the key of the current element: when a timer fires, ``on_timer``
    runs with that key current. Registering the same time twice for a key gives one timer.
    The runtime implements this interface (``ctx.timer_service()``).
    """

    @abstractmethod
    def current_processing_time(self) -> int:
        """The current processing time, in epoch milliseconds."""

    @abstractmethod
    def current_watermark(self) -> int:
        """The current event-time watermark."""

    @abstractmethod
    def register_processing_time_timer(self, timestamp: int) -> None:
        """Fire ``on_timer`` when the processing time passes ``timestamp``."""

    @abstractmethod
    def register_event_time_timer(self, timestamp: int) -> None:
        """Fire ``on_timer`` when the watermark passes ``timestamp``."""

    @abstractmethod
    def delete_processing_time_timer(self, timestamp: int) -> None:
        """Delete the current key's processing-time timer for ``timestamp``, if it has not fired."""

    @abstractmethod
    def delete_event_time_timer(self, timestamp: int) -> None:
        """Delete the current key's event-time timer for ``timestamp``, if it has not fired."""
