"""The network layer: how batches and events travel from one task to the next.

Flink's network stack, in-process: a :class:`RecordWriter` partitions a chain's output
batches over the channels of one out edge and buffers them; a :class:`LocalChannel`
carries buffers and events with credit-based flow control (a full receiver blocks its
senders: backpressure); an :class:`InputGate` hands a task the items of all its channels,
round-robin; a :class:`StatusWatermarkValve` combines the channels' watermarks and
idleness; the :class:`LocalShuffleEnvironment` connects senders and receivers by
ChannelId, whichever is deployed first. Between TaskManager processes, the
:class:`NetworkShuffleEnvironment` adds TCP channels with the same credits (its names are
imported lazily: the in-process stack does not load the TCP one).
"""

from streamkernel.runtime.network.channel import ChannelCancelledError, LocalChannel
from streamkernel.runtime.network.input_gate import InputGate
from streamkernel.runtime.network.record_writer import PartitioningError, RecordWriter
from streamkernel.runtime.network.shuffle import LocalShuffleEnvironment
from streamkernel.runtime.network.watermark_valve import StatusWatermarkValve

__all__ = [
    "ChannelCancelledError",
    "LocalChannel",
    "InputGate",
    "RecordWriter",
    "PartitioningError",
    "StatusWatermarkValve",
    "LocalShuffleEnvironment",
    "NetworkShuffleEnvironment",
    "RemoteChannelError",
]


def __getattr__(name: str):  # lazy: the TCP data plane is only for process/spark TaskManagers
    if name == "NetworkShuffleEnvironment":
        from streamkernel.runtime.network.network_shuffle import NetworkShuffleEnvironment

        return NetworkShuffleEnvironment
    if name == "RemoteChannelError":
        from streamkernel.runtime.network.remote_channel import RemoteChannelError

        return RemoteChannelError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
