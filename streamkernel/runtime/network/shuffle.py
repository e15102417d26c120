"""The in-process shuffle environment: where senders and receivers find their channels.

Flink's ``ShuffleEnvironment`` (``NettyShuffleEnvironment`` creates result partitions and
input gates from the deployment descriptors). Here every channel of a job edge is named by
a :class:`~streamkernel.runtime.core.deployment.ChannelId`; a sending task asks for its output
channels by id (:meth:`LocalShuffleEnvironment.output_channel`), a receiving task for an
input gate over its input channel ids (:meth:`LocalShuffleEnvironment.create_input_gate`).

Deployment order does not matter: whichever side comes first creates the channel object
and the other side finds it. A channel created by its sender has no credit until the
receiver's gate attaches it (the gate grants the credits then), so a sender that starts
first simply blocks in ``send`` until the receiver exists; its wait counts as
backpressure. ``release(job_id)`` drops all channels of a job and cancels whoever is
blocked on them (a sender raises ChannelCancelledError, a poll returns None).

Thread-safe: one lock guards the registry (the invariant: at most one channel object per
ChannelId, and at most one gate attached to it).
"""

from __future__ import annotations

import threading
from typing import Iterable, Optional

from streamkernel.errors import StreamKernelError
from streamkernel.runtime.core.deployment import ChannelId
from streamkernel.runtime.network.channel import LocalChannel
from streamkernel.runtime.network.input_gate import InputGate

__all__ = ["LocalShuffleEnvironment", "channel_name"]


def channel_name(channel_id: ChannelId) -> str:
    """A channel's name in messages: ``job/edge<i>/<source>-><target>#<attempt>``."""
    return (f"{channel_id.job_id}/edge{channel_id.edge_index}/{channel_id.source_subtask}->"
            f"{channel_id.target_subtask}#{channel_id.attempt}")


class LocalShuffleEnvironment:
    """The registry connecting senders and receivers of one process by ChannelId.

    >>> from streamkernel.runtime.core.deployment import ChannelId
    >>> env = LocalShuffleEnvironment()
    >>> cid = ChannelId("job", edge_index=0, source_subtask=0, target_subtask=0)
    >>> out = env.output_channel(cid)              # the sender may come first
    >>> gate = env.create_input_gate("Sink (1/1)", [(cid, 0)])
    >>> out is gate.channels[0]
    True
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # Guarded by _lock: one channel per id; the gates created per job (for release).
        self._channels: dict[ChannelId, LocalChannel] = {}
        self._gates: dict[str, list[InputGate]] = {}

    def create_input_gate(self, name: str, channels: Iterable[tuple[ChannelId, int]], credits: int = 4) -> InputGate:
        """An input gate over ``channels`` (``(channel id, input index)`` pairs, in gate order)."""
        wanted = list(channels)
        ids = [cid for cid, _ in wanted]
        if len(set(ids)) != len(ids):
            raise ValueError(f"input gate {name!r} lists a channel id twice: {ids}")
        if credits < 1:
            raise ValueError(f"credits must be >= 1 for input gate {name!r}, got {credits}")
        bad = [index for _, index in wanted if index not in (0, 1)]
        if bad:
            raise ValueError(f"input gate {name!r}: input_index must be 0 or 1, got {bad[0]!r}")
        gate = InputGate(name)
        with self._lock:
            for cid in ids:
                existing = self._channels.get(cid)
                if existing is not None and existing.gate is not None:
                    raise StreamKernelError(
                        f"channel {channel_name(cid)} already feeds input gate {existing.gate.name!r}; "
                        f"input gate {name!r} cannot read it too")
            for cid, input_index in wanted:
                channel = self._channels.get(cid)
                if channel is None:
                    channel = self._channels[cid] = LocalChannel(channel_name(cid))
                gate._attach(channel, input_index, credits)
            for job_id in {cid.job_id for cid in ids}:
                self._gates.setdefault(job_id, []).append(gate)
        return gate

    def output_channel(self, channel_id: ChannelId, remote_address: Optional[tuple[str, int]] = None) -> LocalChannel:
        """The channel a sender writes to for ``channel_id`` (created if the receiver is not there yet).

        ``remote_address`` must be None: every task of this environment runs in this process
        (channels to other TaskManager processes need a NetworkShuffleEnvironment).
        """
        if remote_address is not None:
            raise StreamKernelError(
                f"channel {channel_name(channel_id)}: its consumer is in the TaskManager at {remote_address}, "
                "but this TaskManager has an in-process (local) shuffle environment only; TaskManagers "
                "of the process and spark backends use NetworkShuffleEnvironment")
        with self._lock:
            channel = self._channels.get(channel_id)
            if channel is None:
                channel = self._channels[channel_id] = LocalChannel(channel_name(channel_id))
            return channel

    def release(self, job_id: str) -> None:
        """Drop every channel and gate of ``job_id`` and wake up whoever is blocked on them."""
        with self._lock:
            channels = [ch for cid, ch in self._channels.items() if cid.job_id == job_id]
            self._channels = {cid: ch for cid, ch in self._channels.items() if cid.job_id != job_id}
            gates = self._gates.pop(job_id, [])
        for gate in gates:
            gate.cancel()
        for channel in channels:
            channel.cancel()

    def input_gates(self, job_id: Optional[str] = None) -> list[InputGate]:
        """The input gates created here (for ``job_id`` only, when given): status and tests."""
        with self._lock:
            return [g for job, gates in self._gates.items() if job_id is None or job == job_id for g in gates]

    def job_ids(self) -> set[str]:
        """The jobs that have channels or gates here."""
        with self._lock:
            return {cid.job_id for cid in self._channels} | set(self._gates)

    def num_channels(self, job_id: str | None = None) -> int:
        """Channels registered (for ``job_id`` only, when given)."""
        with self._lock:
            return sum(1 for cid in self._channels if job_id is None or cid.job_id == job_id)

    def __repr__(self) -> str:
        return f"LocalShuffleEnvironment(channels={len(self._channels)})"
