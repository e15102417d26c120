"""How many network buffers a task needs, and the credits of its channels (Flink's
``InputGateSpecUtils`` and ``NettyShuffleUtils``, for streaming's pipelined partitions).

* An input gate (one per consumed job edge, as in Flink) over ``n`` channels: each channel gets
  ``taskmanager.network.memory.buffers-per-channel`` (2) exclusive buffers and the gate
  ``taskmanager.network.memory.floating-buffers-per-gate`` (8) floating ones; at deployment it
  needs ``n x buffers-per-channel + 1`` of them (Flink's ``GateBuffersSpec``: the exclusive
  buffers plus one floating buffer), at most ``n x buffers-per-channel + floating``.
* A result partition (one per job edge the task produces) over ``s`` subpartitions needs
  ``s + 1`` buffers, at most ``s x buffers-per-channel + floating`` (Flink's
  ``getMinMaxNetworkBuffersPerResultPartition`` for a bounded pipelined partition).
* A task needs the sum over its gates and partitions: :func:`required_buffers`.

Credits: the receiver grants each channel its exclusive buffers plus an even share of its
gate's floating buffers (:func:`credits_per_channel`; Flink lends floating buffers to the
channels with backlog, streamkernel's channels have a fixed number of slots).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from streamkernel.common.options import NettyShuffleEnvironmentOptions

__all__ = ["GateBuffersSpec", "gate_buffers_spec", "result_partition_buffers", "required_buffers",
           "credits_per_channel", "NetworkBufferSettings"]


@dataclass(frozen=True)
class NetworkBufferSettings:
    """``buffers-per-channel`` and ``floating-buffers-per-gate`` of a configuration."""

    buffers_per_channel: int = 2
    floating_buffers_per_gate: int = 8

    @classmethod
    def from_configuration(cls, configuration: Mapping[str, Any]) -> "NetworkBufferSettings":
        """The settings ``configuration`` holds (the deprecated ``taskmanager.network.credits-per-channel``
        is read as ``buffers-per-channel``)."""
        return cls(NettyShuffleEnvironmentOptions.NETWORK_BUFFERS_PER_CHANNEL.get(configuration),
                   NettyShuffleEnvironmentOptions.NETWORK_EXTRA_BUFFERS_PER_GATE.get(configuration))


@dataclass(frozen=True)
class GateBuffersSpec:
    """The buffers of one input gate (Flink's ``GateBuffersSpec``)."""

    effective_exclusive_buffers_per_channel: int
    min_buffers_per_gate: int
    max_buffers_per_gate: int


def gate_buffers_spec(num_input_channels: int, settings: NetworkBufferSettings = NetworkBufferSettings()
                      ) -> GateBuffersSpec:
    """The buffers of a gate over ``num_input_channels`` channels of a pipelined partition.

        >>> gate_buffers_spec(4)
        GateBuffersSpec(effective_exclusive_buffers_per_channel=2, min_buffers_per_gate=9, max_buffers_per_gate=16)
    """
    if num_input_channels < 1:
        raise ValueError(f"an input gate has at least one channel, got {num_input_channels}")
    expected = num_input_channels * settings.buffers_per_channel + 1  # streaming: no max-required threshold
    exclusive = min(settings.buffers_per_channel, (expected - 1) // num_input_channels)
    maximum = num_input_channels * settings.buffers_per_channel + settings.floating_buffers_per_gate
    return GateBuffersSpec(exclusive, expected, maximum)


def result_partition_buffers(num_subpartitions: int, settings: NetworkBufferSettings = NetworkBufferSettings()
                             ) -> tuple[int, int]:
    """``(min, max)`` buffers of a pipelined bounded result partition with ``num_subpartitions``.

        >>> result_partition_buffers(4)
        (5, 16)
    """
    if num_subpartitions < 1:
        raise ValueError(f"a result partition has at least one subpartition, got {num_subpartitions}")
    minimum = num_subpartitions + 1
    return minimum, max(minimum, num_subpartitions * settings.buffers_per_channel + settings.floating_buffers_per_gate)


def _gate_sizes(tdd: Any) -> list[int]:
    """Channels of each input gate of ``tdd``: one gate per consumed job edge."""
    return list(Counter(d.channel_id.edge_index for d in tdd.inputs).values())


def required_buffers(tdd: Any, settings: NetworkBufferSettings) -> int:
    """The buffers task ``tdd`` needs at deployment: its gates' and its partitions' minimums."""
    gates = sum(gate_buffers_spec(n, settings).min_buffers_per_gate for n in _gate_sizes(tdd))
    partitions = sum(result_partition_buffers(len(o.channel_ids), settings)[0] for o in tdd.outputs
                     if o.channel_ids)
    return gates + partitions


def credits_per_channel(tdd: Any, settings: NetworkBufferSettings) -> int:
    """The credits each input channel of ``tdd`` gets: its exclusive buffers plus an even share of
    its gate's floating buffers (at least 1: a channel must be able to take a buffer).

        >>> from types import SimpleNamespace as N
        >>> tdd = N(inputs=[N(channel_id=N(edge_index=0))] * 4, outputs=())
        >>> credits_per_channel(tdd, NetworkBufferSettings()), credits_per_channel(tdd, NetworkBufferSettings(4, 0))
        (4, 4)
    """
    gates = _gate_sizes(tdd)
    channels = sum(gates)
    if not channels:
        return max(1, settings.buffers_per_channel)
    floating = settings.floating_buffers_per_gate * len(gates)
    return max(1, settings.buffers_per_channel + floating // channels)
