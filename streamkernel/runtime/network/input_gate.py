"""The receiving side of a task: all its input channels behind one ``poll``.

Flink's ``SingleInputGate`` (a task with two inputs uses one gate here too; each channel
says which input it feeds). The gate keeps a queue of the channels that have data, in the
order they got it, exactly like Flink's ``inputChannelsWithData``: ``poll`` takes the
first such channel, removes *one* item from it and, if the channel has more, puts it back
at the *end* of the queue. That is round-robin among channels with data, so a fast
channel cannot starve a slow one, and it costs O(1) per item whatever the number of
channels.

Credits: taking an item out of a channel frees a buffer slot, so ``poll`` grants the
credit back to that channel's sender at once (Flink grants it when the buffer is
recycled; here the item is handed to the task, which holds at most one at a time).

Barrier alignment (checkpoints): a *blocked* channel keeps receiving while it has credit
but ``poll`` does not return its items until it is unblocked.

Unaligned checkpoints: a sender puts its barrier into the channel without waiting for credit
and *announces* it; ``poll`` returns the announcement (an :class:`EventAnnouncement`) before
any queued item, and :meth:`InputGate.pull_barrier` takes the barrier out of the queue,
returning the buffers it overtook (Flink's priority events and ``convertToPriorityEvent``).

Locking: one lock for the gate's queue of channels with data; each channel has its own
lock for its items and credits; the order is always gate -> channel.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Any, Optional

from streamkernel.runtime.core.records import CheckpointBarrier, DataBuffer, EventAnnouncement
from streamkernel.runtime.network.channel import LocalChannel

__all__ = ["InputGate"]


class InputGate:
    """The input of one task: many channels, one fair ``poll`` (Flink's InputGate).

    >>> gate = InputGate("Sum (1/1)")
    >>> a, b = gate.create_channel(0), gate.create_channel(1)
    >>> _ = a.send("a1"); _ = a.send("a2"); _ = b.send("b1")
    >>> [item for _, item in (gate.poll(0), gate.poll(0), gate.poll(0))]
    ['a1', 'b1', 'a2']
    >>> gate.poll(0.01) is None  # nothing left: None after the timeout
    True
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.channels: list[LocalChannel] = []
        self._lock = threading.Lock()
        # Guarded by _lock: channels that may have data (a channel is here at most once,
        # exactly while its _listed flag is True); the waiting pollers; cancel/wakeup flags.
        self._data_cond = threading.Condition(self._lock)
        self._available: deque[LocalChannel] = deque()
        self._announcements: deque[tuple[LocalChannel, EventAnnouncement]] = deque()
        self._waiters = 0
        self._cancelled = False
        self._wakeup = False

    # ------------------------------------------------------------------- channels
    def create_channel(self, input_index: int, credits: int = 4, name: str = "") -> LocalChannel:
        """Create and register a channel feeding input ``input_index`` with ``credits`` slots."""
        channel = LocalChannel(name or f"{self.name}#{len(self.channels)}")
        self._attach(channel, input_index, credits)
        return channel

    def _attach(self, channel: LocalChannel, input_index: int, credits: int) -> None:
        """Register an existing channel (created by a sender first) and grant its credits."""
        if credits < 1:
            raise ValueError(f"credits must be >= 1 for a channel of input gate {self.name!r}, got {credits}")
        if input_index not in (0, 1):
            raise ValueError(f"input_index must be 0 or 1 (which input of the operator), got {input_index}")
        with self._lock:
            channel._attach(self, len(self.channels), input_index, credits)
            self.channels.append(channel)
            if self._cancelled:
                channel.cancel()

    @property
    def num_channels(self) -> int:
        """How many channels feed this gate."""
        return len(self.channels)

    # ----------------------------------------------------------------------- poll
    def poll(self, timeout: Optional[float] = None) -> Optional[tuple[LocalChannel, Any]]:
        """The next ``(channel, item)`` from any unblocked channel, round-robin among those with data.

        Waits up to ``timeout`` seconds (None: forever; 0: do not wait) and returns None
        if nothing came, if the gate was cancelled, or if :meth:`wakeup` was called.
        The item's credit goes back to its sender.
        """
        with self._lock:
            deadline: Optional[float] = None
            available = self._available
            while True:
                if self._cancelled:
                    return None
                if self._announcements:  # priority events first (unaligned checkpoints)
                    return self._announcements.popleft()
                while available:
                    channel = available.popleft()
                    with channel._lock:
                        queue = channel._queue
                        if channel._blocked or not queue:
                            channel._listed = False  # re-listed by send / unblock_channel
                            continue
                        item = queue.popleft()
                        channel.buffers_received += 1
                        channel._credits += 1  # the freed slot: a credit back to the sender
                        if channel._sender_waiting:
                            channel._notify_sender()
                        if queue:
                            available.append(channel)  # round-robin: to the back of the queue
                        else:
                            channel._listed = False
                    return channel, item
                if self._wakeup:
                    self._wakeup = False
                    return None
                if timeout is None:
                    remaining = None
                else:
                    now = time.monotonic()
                    if deadline is None:
                        deadline = now + timeout
                    remaining = deadline - now
                    if remaining <= 0:
                        return None
                self._waiters += 1
                try:
                    self._data_cond.wait(remaining)
                finally:
                    self._waiters -= 1

    def _channel_has_data(self, channel: LocalChannel) -> None:
        """Called by a channel's sender when the channel got data and was not listed."""
        with self._lock:
            self._available.append(channel)
            if self._waiters:
                self._data_cond.notify()

    def _announce(self, channel: LocalChannel, barrier: CheckpointBarrier) -> None:
        """Called by a channel's sender after it put ``barrier`` into the channel (unaligned)."""
        with self._lock:
            self._announcements.append((channel, EventAnnouncement(barrier)))
            if self._waiters:
                self._data_cond.notify()

    def pull_barrier(self, channel: LocalChannel, checkpoint_id: int) -> Optional[list[DataBuffer]]:
        """Take barrier ``checkpoint_id`` out of ``channel``'s queue, ahead of the items before it.

        Returns the data buffers the barrier overtook (they stay queued and are processed as
        usual: they are the checkpoint's in-flight data of this channel), or None when the
        barrier is not in the queue (it was already taken, or has not arrived).
        """
        self._check_owned(channel)
        with self._lock, channel._lock:
            queue = channel._queue
            position = next((i for i, item in enumerate(queue)
                             if type(item) is CheckpointBarrier and item.checkpoint_id == checkpoint_id), -1)
            if position < 0:
                return None
            overtaken = [queue[i] for i in range(position) if type(queue[i]) is DataBuffer]
            del queue[position]
            channel._credits += 1  # the barrier's slot is free again
            if channel._sender_waiting:
                channel._notify_sender()
            return overtaken

    def has_announcements(self) -> bool:
        """True when a priority event waits (the task should poll before it processes more)."""
        return bool(self._announcements)

    def push_front(self, channel: LocalChannel, item: Any) -> None:
        """Put ``item`` back at the head of ``channel``'s queue (the unprocessed rest of a buffer
        the task stops in the middle of, to handle a priority event first)."""
        self._check_owned(channel)
        with self._lock:
            with channel._lock:
                channel._queue.appendleft(item)
                channel._credits -= 1  # the slot is taken again
                if channel._listed or channel._blocked:
                    return
                channel._listed = True
            self._available.appendleft(channel)

    def wakeup(self) -> None:
        """Make one blocked (or the next) ``poll`` return None early.

        For the task's mailbox: an action from another thread (a checkpoint trigger, a
        processing-time timer) interrupts the wait for input.
        """
        with self._lock:
            self._wakeup = True
            self._data_cond.notify_all()

    # -------------------------------------------------------------- barrier alignment
    def block_channel(self, channel: LocalChannel) -> None:
        """Hold back ``channel``'s items: ``poll`` skips it until :meth:`unblock_channel`."""
        self._check_owned(channel)
        with self._lock, channel._lock:
            channel._blocked = True

    def unblock_channel(self, channel: LocalChannel) -> None:
        """Release ``channel``: its held-back items are returned by ``poll`` again."""
        self._check_owned(channel)
        with self._lock:
            with channel._lock:
                channel._blocked = False
                if not channel._queue or channel._listed:
                    return
                channel._listed = True
            self._available.append(channel)
            if self._waiters:
                self._data_cond.notify()

    def is_blocked(self, channel: LocalChannel) -> bool:
        """True while ``channel`` is blocked (barrier alignment)."""
        return channel._blocked

    def _check_owned(self, channel: LocalChannel) -> None:
        if channel._gate is not self:
            raise ValueError(f"channel {channel.name!r} does not belong to input gate {self.name!r}")

    # ---------------------------------------------------------------- life and status
    def cancel(self) -> None:
        """Wake up everybody blocked on this gate or its channels; the gate then stays dead.

        Afterwards ``poll`` returns None at once and senders raise ChannelCancelledError.
        """
        with self._lock:
            self._cancelled = True
            self._data_cond.notify_all()
            channels = list(self.channels)
        for channel in channels:
            channel.cancel()

    @property
    def is_cancelled(self) -> bool:
        """True once :meth:`cancel` was called."""
        return self._cancelled

    def queued_buffers(self) -> int:
        """Items (buffers and events) waiting in all channels: the input queue length metric."""
        return sum(len(channel._queue) for channel in self.channels)

    def __repr__(self) -> str:
        return f"InputGate({self.name!r}, channels={len(self.channels)}, queued={self.queued_buffers()})"
