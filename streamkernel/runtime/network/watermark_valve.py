"""Combining the watermarks of many input channels into one: Flink's StatusWatermarkValve.

A task with several input channels may only advance its event time to the *minimum* of
the watermarks its channels have sent: a record with a smaller timestamp may still come on
the slowest channel. Channels declared *idle* (``WatermarkStrategy.with_idleness``: a
source split with no data for a while) do not hold the minimum back; when every channel
is idle the task itself becomes idle, and it becomes active again as soon as one channel
does.

The rules, as in Flink's ``StatusWatermarkValve``:

* The output watermark never goes backwards.
* A channel is *aligned* when it is active and its watermark has caught up with the last
  output watermark; the output is the minimum over aligned channels. A channel that comes
  back from idleness with a watermark below the output does not pull it back: it rejoins
  the minimum only once its watermark catches up.
* Watermarks arriving on an idle channel are ignored (the sender announces ACTIVE first).
* When the last active channel goes idle, the output advances to the maximum watermark
  over all channels before the valve reports idleness (nothing can hold it back).

Added here: :meth:`StatusWatermarkValve.channel_finished` for a channel that ended
(END_OF_PARTITION): it no longer holds the minimum back; when every channel has ended the
output is MAX_WATERMARK.

Pure logic, no threads: the task calls it for each watermark event it polls.
"""

from __future__ import annotations

from typing import Optional

from streamkernel.common.watermark_strategy import MAX_WATERMARK, MIN_WATERMARK

__all__ = ["StatusWatermarkValve"]


class StatusWatermarkValve:
    """Per-channel watermarks and idleness in, the task's combined watermark and status out.

    >>> valve = StatusWatermarkValve(2)
    >>> valve.input_watermark(0, 10) is None   # channel 1 still at MIN: no progress
    True
    >>> valve.input_watermark(1, 7)            # min(10, 7)
    7
    >>> valve.input_watermark_status(1, idle=True)  # channel 1 idle: min over channel 0
    (10, None)
    """

    def __init__(self, num_channels: int) -> None:
        if num_channels < 1:
            raise ValueError(f"a StatusWatermarkValve needs at least one channel, got num_channels={num_channels}")
        self.num_channels = num_channels
        self._watermarks = [MIN_WATERMARK] * num_channels
        self._idle = [False] * num_channels
        self._aligned = [True] * num_channels
        self._finished = [False] * num_channels
        self._output_watermark = MIN_WATERMARK
        self._output_idle = False

    # --------------------------------------------------------------------- inputs
    def input_watermark(self, channel_index: int, timestamp: int) -> Optional[int]:
        """A watermark arrived on ``channel_index``: the new combined watermark if it advanced."""
        if self._idle[channel_index] or self._finished[channel_index]:
            return None
        if timestamp <= self._watermarks[channel_index]:
            return None
        self._watermarks[channel_index] = timestamp
        if not self._aligned[channel_index] and timestamp >= self._output_watermark:
            self._aligned[channel_index] = True
        return self._advance_to_min_of_aligned()

    def input_watermark_status(self, channel_index: int, idle: bool) -> tuple[Optional[int], Optional[bool]]:
        """Channel ``channel_index`` became idle / active.

        Returns ``(watermark, status)``: a watermark to emit first (marking a channel idle
        can advance the minimum), then the task's new idle status when it changed (True:
        every channel idle; False: active again), each None when there is nothing to emit.
        """
        if self._finished[channel_index]:
            return None, None
        if idle and not self._idle[channel_index]:
            self._idle[channel_index] = True
            self._aligned[channel_index] = False
            if not self._has_active_channel():
                watermark = None
                if self._watermarks[channel_index] == self._output_watermark:
                    watermark = self._advance_to_max_of_all()
                self._output_idle = True
                return watermark, True
            if self._watermarks[channel_index] == self._output_watermark:
                return self._advance_to_min_of_aligned(), None
            return None, None
        if not idle and self._idle[channel_index]:
            self._idle[channel_index] = False
            if self._watermarks[channel_index] >= self._output_watermark:
                self._aligned[channel_index] = True
            if self._output_idle:
                self._output_idle = False
                return None, False
        return None, None

    def channel_finished(self, channel_index: int) -> Optional[int]:
        """Channel ``channel_index`` ended: it no longer holds the watermark back.

        Returns the new combined watermark if that advanced it (MAX_WATERMARK once every
        channel has ended). The task's idle status does not change here.
        """
        if self._finished[channel_index]:
            return None
        self._finished[channel_index] = True
        self._aligned[channel_index] = False
        self._idle[channel_index] = False
        self._watermarks[channel_index] = MAX_WATERMARK
        if all(self._finished):
            return self._advance_to(MAX_WATERMARK)
        return self._advance_to_min_of_aligned()

    # --------------------------------------------------------------------- status
    @property
    def output_watermark(self) -> int:
        """The last combined watermark (MIN_WATERMARK before the first one)."""
        return self._output_watermark

    @property
    def is_idle(self) -> bool:
        """True while every (unfinished) channel is idle."""
        return self._output_idle

    def channel_watermark(self, channel_index: int) -> int:
        """The last watermark seen on ``channel_index``."""
        return self._watermarks[channel_index]

    def is_channel_idle(self, channel_index: int) -> bool:
        """True while ``channel_index`` is idle."""
        return self._idle[channel_index]

    # ------------------------------------------------------------------- internals
    def _has_active_channel(self) -> bool:
        return any(not idle and not finished for idle, finished in zip(self._idle, self._finished))

    def _advance_to_min_of_aligned(self) -> Optional[int]:
        aligned = [wm for wm, ok in zip(self._watermarks, self._aligned) if ok]
        if not aligned:
            return None
        return self._advance_to(min(aligned))

    def _advance_to_max_of_all(self) -> Optional[int]:
        unfinished = [wm for wm, done in zip(self._watermarks, self._finished) if not done]
        return self._advance_to(max(unfinished)) if unfinished else None

    def _advance_to(self, watermark: int) -> Optional[int]:
        if watermark > self._output_watermark:
            self._output_watermark = watermark
            return watermark
        return None

    def __repr__(self) -> str:
        return (f"StatusWatermarkValve(output={self._output_watermark}, idle={self._output_idle}, "
                f"channels={self._watermarks})")
