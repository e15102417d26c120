"""TimeDomain: which clock a timer belongs to, as ``pyflink.datastream.time_domain``."""

from __future__ import annotations

from enum import Enum

__all__ = ["TimeDomain"]


class TimeDomain(Enum):
    """The time domain of a firing timer, given to ``on_timer`` through ``ctx.time_domain()``.

    - ``EVENT_TIME``: the timer was registered for an event time and fired when the
      watermark passed it.
    - ``PROCESSING_TIME``: the timer was registered for a processing (wall-clock) time.
    """

    EVENT_TIME = 0
    PROCESSING_TIME = 1
