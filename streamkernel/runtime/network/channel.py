"""A channel between two tasks in one process, with Flink's credit-based flow control.

A :class:`LocalChannel` connects one producing subtask (its RecordWriter) to one input of
a consuming task (its :class:`~streamkernel.runtime.network.input_gate.InputGate`). It is
Flink's ``LocalInputChannel`` plus the credit protocol of ``RemoteInputChannel``: the
receiver owns ``credits`` buffer slots for the channel and grants one credit per free slot;
the sender may only put an item into the channel while it holds a credit, and blocks
otherwise. A slow receiver therefore stops its senders instead of growing memory, and the
time a sender spends waiting is its *backpressure*, which :meth:`LocalChannel.send`
returns so the task can measure it.

Every item takes a credit, events too (watermarks, barriers, END_OF_PARTITION), so a
channel never holds more than ``credits`` items: memory is bounded in all cases.

Threads and locks: the channel's own lock guards its queue and credits (one sender, one
receiver). The gate has a separate lock for its list of channels that have data; the lock
order is always gate -> channel (the sender releases the channel lock before it takes the
gate's, to tell the gate the channel has data). A channel may exist before its gate (the
shuffle environment hands it to a sender first): until the gate attaches it, it has no
credit and the sender simply waits.

Costs are per *buffer* (a batch of records), never per record.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import TYPE_CHECKING, Any, Optional

from streamkernel.errors import StreamKernelError
from streamkernel.runtime.core.records import DataBuffer

if TYPE_CHECKING:  # pragma: no cover
    from streamkernel.runtime.network.input_gate import InputGate

__all__ = ["ChannelCancelledError", "LocalChannel"]


class ChannelCancelledError(StreamKernelError):
    """A channel (or its input gate) was cancelled while a sender used it.

    Raised by :meth:`LocalChannel.send` once the receiving gate was cancelled or the job's
    channels were released (the job ended, failed or restarts). A task that sees it should
    stop: nobody will read what it sends.
    """


class LocalChannel:
    """One in-process channel from a sender subtask to an input of a receiver task.

    ``index`` is the channel's position in its gate and ``input_index`` says which input of
    the receiving operator it feeds (0, or 1 for the second input of a two-input operator);
    both are -1 / 0 until a gate attaches the channel. ``send`` blocks while the channel
    has no credit; the gate's ``poll`` takes items out and grants the credits back.

    >>> from streamkernel.runtime.network.input_gate import InputGate
    >>> gate = InputGate("Map (1/1)")
    >>> channel = gate.create_channel(0, credits=2)
    >>> channel.send("an item")  # nanoseconds waited for credit
    0
    >>> gate.poll(0)[1]
    'an item'
    """

    __slots__ = ("name", "index", "input_index", "_gate", "_lock", "_credit_cond", "_queue",
                 "_credits", "_blocked", "_listed", "_cancelled", "_sender_waiting", "_credit_event",
                 "buffer_size", "bytes_received", "buffers_received", "remote")

    def __init__(self, name: str = "") -> None:
        self.name = name
        self.index = -1
        self.input_index = 0
        self._gate: Optional["InputGate"] = None
        self._lock = threading.Lock()
        # Invariant (under _lock): len(_queue) + _credits == credits granted by the gate
        # (0 before attach), i.e. the channel never holds more items than its credits.
        self._credit_cond = threading.Condition(self._lock)
        self._queue: deque[Any] = deque()
        self._credits = 0
        self._blocked = False  # barrier alignment: poll skips this channel (gate-owned flag)
        self._listed = False  # True while the channel is in its gate's list of channels with data
        self._cancelled = False
        self._sender_waiting = False
        self._credit_event: Optional[threading.Event] = None  # set when a credit comes back (await_credit)
        # buffer debloating: records per buffer the receiver announced (0: none, the writer's own size)
        self.buffer_size = 0
        # bytes of the frames that brought its items from another process (the network thread
        # adds them; 0 for a channel inside one process, whose items are objects, never bytes)
        self.bytes_received = 0
        # items (buffers and events) the receiver took out (the gate counts them as it polls);
        # remote: fed by another TaskManager's producer (a RemoteFeed), not by a sender here
        self.buffers_received = 0
        self.remote = False

    # ------------------------------------------------------------------ sender side
    def send(self, item: Any) -> int:
        """Append ``item`` (a DataBuffer or an event); block while no credit is available.

        Returns the nanoseconds spent waiting for credit (0 when a credit was free): the
        sender's backpressured time. Raises :class:`ChannelCancelledError` if the channel
        or its gate is (or gets) cancelled.
        """
        waited = 0
        with self._lock:
            if self._credits <= 0 or self._cancelled:
                waited = self._wait_for_credit()
            self._credits -= 1
            self._queue.append(item)
            if self._listed or self._blocked:
                return waited
            self._listed = True
            gate = self._gate
        # Outside the channel lock (lock order gate -> channel): tell the gate we have data.
        gate._channel_has_data(self)  # type: ignore[union-attr]
        return waited

    def _wait_for_credit(self) -> int:
        """Wait (holding ``_lock`` via the condition) until a credit is free; return ns waited."""
        start = time.perf_counter_ns()
        self._sender_waiting = True
        try:
            while self._credits <= 0 and not self._cancelled:
                self._credit_cond.wait()
        finally:
            self._sender_waiting = False
        if self._cancelled:
            raise ChannelCancelledError(
                f"channel {self.name or self.index!r} was cancelled: its receiver is gone "
                "(the job was cancelled, failed or is restarting)")
        return time.perf_counter_ns() - start

    def send_overdraft(self, item: Any) -> None:
        """Append ``item`` without waiting for credit (Flink's overdraft buffers).

        For unaligned checkpoints: a task that snapshots must put its partly filled buffers
        and the barrier into the channel at once, even when the receiver is backpressuring.
        The credits go negative; the sender's next :meth:`send` waits until the receiver
        caught up, so the queue holds at most a few items more than its credits.
        """
        with self._lock:
            if self._cancelled or self._gate is None:  # not attached yet: wait for the gate's credits
                if self._credits <= 0 or self._cancelled:
                    self._wait_for_credit()
            self._credits -= 1
            self._queue.append(item)
            if self._listed or self._blocked:
                return
            self._listed = True
            gate = self._gate
        gate._channel_has_data(self)  # type: ignore[union-attr]

    def await_credit(self, event: threading.Event) -> bool:
        """True if a credit is free now; else ``event`` is set when one comes back (or the
        channel is cancelled) and False is returned. The sender calls :meth:`stop_awaiting`
        when it stops waiting. Lets a task wait for output and for its mailbox at once."""
        with self._lock:
            if self._credits > 0 or self._cancelled:
                return True
            self._credit_event = event
            self._sender_waiting = True
            return False

    def stop_awaiting(self) -> None:
        """End an :meth:`await_credit`."""
        with self._lock:
            self._credit_event = None
            self._sender_waiting = False

    def _notify_sender(self) -> None:
        """(Receiver, holding ``_lock``) a credit came back: wake the waiting sender."""
        self._credit_cond.notify()
        if self._credit_event is not None:
            self._credit_event.set()

    def announce(self, barrier: Any) -> None:
        """Tell the receiving gate, ahead of the queued items, that ``barrier`` is in the channel."""
        gate = self._gate
        if gate is None:
            raise ChannelCancelledError(f"channel {self.name!r} has no input gate to announce a barrier to")
        gate._announce(self, barrier)

    # ----------------------------------------------------------------- receiver side
    def _attach(self, gate: "InputGate", index: int, input_index: int, credits: int) -> None:
        """Connect the channel to ``gate`` at position ``index`` and grant ``credits``."""
        with self._lock:
            if self._cancelled:
                raise ChannelCancelledError(f"channel {self.name!r} was cancelled before its gate attached it")
            if self._gate is not None:
                raise StreamKernelError(
                    f"channel {self.name!r} is already attached to input gate {self._gate.name!r}; "
                    f"cannot attach it to {gate.name!r} too")
            self._gate = gate
            self.index = index
            self.input_index = input_index
            self._credits += credits
            self._credit_cond.notify_all()

    def announce_buffer_size(self, size: int) -> None:
        """(Receiver) buffer debloating: the sender should send buffers of ``size`` records
        (Flink's ``InputChannel.announceBufferSize``). The sender of an in-process channel reads
        :attr:`buffer_size` per batch; a channel fed from another TaskManager forwards the size
        to its producer (its credit condition is then a ``RemoteFeed``)."""
        self.buffer_size = size
        forward = getattr(self._credit_cond, "announce_buffer_size", None)
        if forward is not None:
            forward(size)

    def cancel(self) -> None:
        """Cancel the channel: a blocked sender wakes up and raises ChannelCancelledError."""
        with self._lock:
            self._cancelled = True
            self._credit_cond.notify_all()
            if self._credit_event is not None:
                self._credit_event.set()

    # ---------------------------------------------------------------------- status
    def queued(self) -> int:
        """How many items (buffers and events) wait in the channel for the receiver."""
        return len(self._queue)

    def queued_records(self) -> int:
        """Records in the buffers waiting in the channel (the in-flight data buffer debloating bounds)."""
        with self._lock:
            items = list(self._queue)
        return sum(len(item.values) for item in items if type(item) is DataBuffer)

    @property
    def available_credits(self) -> int:
        """Credits the sender holds right now: items it may still send without blocking."""
        return self._credits

    @property
    def gate(self) -> Optional["InputGate"]:
        """The input gate this channel feeds (None until attached)."""
        return self._gate

    @property
    def is_cancelled(self) -> bool:
        """True once the channel or its gate was cancelled."""
        return self._cancelled

    def __repr__(self) -> str:
        return (f"LocalChannel({self.name!r}, index={self.index}, input_index={self.input_index}, "
                f"queued={len(self._queue)}, credits={self._credits})")
