"""The operator chain of a task: operators that call each other directly, batch by batch.

A job vertex chains several operators (``Source -> Map -> Filter``); one Task runs one
subtask of the whole chain in one thread. Each operator's :class:`Output` is either the next
operator (a direct call: no buffer, no copy, no thread hand-over — what chaining buys), a
:class:`RecordWriterOutput` into the network for a non-chained edge, or a
:class:`RouterOutput` when an operator feeds several places (forks, side outputs).
Watermarks follow the same links, so every downstream operator sees each watermark once.
An operator with a declared output type converts its batches as PyFlink's coders do
(:class:`~streamkernel.runtime.tasks.typed_output.TypedOutput`) before any of them.

Given each operator's :class:`~streamkernel.runtime.core.metrics.OperatorMetrics`, the links
record the watermarks that pass (Flink's ``currentInputWatermark`` / ``currentOutputWatermark``
of an operator): a link between two operators is the first's output and the second's input, a
link into the network or into nothing (a sink) the operator's output. Only the watermark calls
record; the batches' path is untouched.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Optional

from streamkernel.graph.stream_graph import StreamEdge, StreamNode
from streamkernel.runtime.core.metrics import OperatorMetrics
from streamkernel.runtime.core.records import Watermark, WatermarkStatus
from streamkernel.runtime.operators.base import Output, StreamOperator
from streamkernel.runtime.tasks.typed_output import typed_output

__all__ = ["ChainingOutput", "RecordWriterOutput", "RouterOutput", "OperatorChain", "NO_OUTPUT"]


class _NoOutput:
    """The output of an operator with no successor (a sink): everything is dropped (the
    watermarks it emits are recorded as its output watermark when ``metrics`` is given)."""

    __slots__ = ("metrics",)

    def __init__(self, metrics: Optional[OperatorMetrics] = None) -> None:
        self.metrics = metrics

    def emit(self, values: list, timestamps: Optional[list]) -> None:
        """Nothing downstream."""

    def emit_watermark(self, timestamp: int) -> None:
        """Nothing downstream."""
        if self.metrics is not None:
            self.metrics.output_watermark = timestamp

    def emit_watermark_status(self, idle: bool) -> None:
        """Nothing downstream."""

    def emit_side(self, tag: Any, values: list, timestamps: Optional[list]) -> None:
        """Nothing downstream."""


NO_OUTPUT = _NoOutput()


class ChainingOutput:
    """The next operator of the chain, called directly (the hot path: one call per batch).
    ``upstream`` / ``downstream``: the two operators' metrics, where a watermark passing is
    recorded (None: not recorded)."""

    __slots__ = ("operator", "emit", "upstream", "downstream")

    def __init__(self, operator: StreamOperator, upstream: Optional[OperatorMetrics] = None,
                 downstream: Optional[OperatorMetrics] = None) -> None:
        self.operator = operator
        self.emit = operator.process_batch  # bound once: emit(values, timestamps) is a direct call
        self.upstream = upstream
        self.downstream = downstream

    def emit_watermark(self, timestamp: int) -> None:
        """Forward the watermark to the next operator."""
        if self.upstream is not None:
            self.upstream.output_watermark = timestamp
        if self.downstream is not None:
            self.downstream.input_watermark = timestamp
        self.operator.process_watermark(timestamp)

    def emit_watermark_status(self, idle: bool) -> None:
        """Forward idleness to the next operator."""
        self.operator.process_watermark_status(idle)

    def emit_side(self, tag: Any, values: list, timestamps: Optional[list]) -> None:
        """Side outputs are routed by RouterOutput; a plain link carries none."""


class RecordWriterOutput:
    """A non-chained edge: batches go to the RecordWriter, which partitions them to channels.
    ``upstream``: the metrics of the operator emitting into it (its output watermark)."""

    __slots__ = ("writer", "emit", "on_watermark", "upstream")

    def __init__(self, writer: Any, on_watermark: Optional[Callable[[int], None]] = None) -> None:
        self.writer = writer
        self.emit = writer.emit
        self.on_watermark = on_watermark
        self.upstream: Optional[OperatorMetrics] = None

    def emit_watermark(self, timestamp: int) -> None:
        """Send the watermark to every channel of the edge (after the pending records)."""
        self.writer.broadcast_event(Watermark(timestamp))
        if self.upstream is not None:
            self.upstream.output_watermark = timestamp
        if self.on_watermark is not None:
            self.on_watermark(timestamp)

    def emit_watermark_status(self, idle: bool) -> None:
        """Send idleness to every channel of the edge."""
        self.writer.broadcast_event(WatermarkStatus(idle))

    def emit_side(self, tag: Any, values: list, timestamps: Optional[list]) -> None:
        """Side outputs are routed by RouterOutput."""


class RouterOutput:
    """Several destinations: main outputs get ``emit``, side outputs get ``emit_side`` by tag."""

    def __init__(self, main: list[Output], side: dict[Any, list[Output]]) -> None:
        self.main = main
        self.side = side
        everyone: list[Output] = list(main)
        for outs in side.values():
            everyone.extend(o for o in outs if all(o is not e for e in everyone))
        self.everyone = everyone

    def emit(self, values: list, timestamps: Optional[list]) -> None:
        """The batch to every main destination."""
        for out in self.main:
            out.emit(values, timestamps)

    def emit_side(self, tag: Any, values: list, timestamps: Optional[list]) -> None:
        """The batch to the destinations of side output ``tag`` (dropped if nobody reads it)."""
        for out in self.side.get(tag, ()):
            out.emit(values, timestamps)

    def emit_watermark(self, timestamp: int) -> None:
        """Watermarks reach every destination, side outputs included, once each."""
        for out in self.everyone:
            out.emit_watermark(timestamp)

    def emit_watermark_status(self, idle: bool) -> None:
        """Idleness reaches every destination once."""
        for out in self.everyone:
            out.emit_watermark_status(idle)


class OperatorChain:
    """The operators of one subtask, wired head to tails, in topological order.

    ``make_operator(node)`` creates each operator; ``network_output(edge)`` gives the
    output for a non-chained edge leaving the chain; ``operator_metrics(node)`` (optional) the
    metrics its links record watermarks into (module docstring).
    """

    def __init__(self, nodes: Iterable[StreamNode], chain_edges: Iterable[StreamEdge],
                 network_edges: Iterable[StreamEdge], make_operator: Callable[[StreamNode], StreamOperator],
                 network_output: Callable[[StreamEdge], Output],
                 operator_metrics: Optional[Callable[[StreamNode], OperatorMetrics]] = None) -> None:
        self.nodes = tuple(nodes)
        self.operators: dict[int, StreamOperator] = {n.id: make_operator(n) for n in self.nodes}
        chain_edges = tuple(chain_edges)
        network_edges = tuple(network_edges)
        by_id = {n.id: n for n in self.nodes}

        def metrics(node_id: int) -> Optional[OperatorMetrics]:
            return operator_metrics(by_id[node_id]) if operator_metrics is not None else None

        self.outputs: dict[int, Output] = {}
        for node in self.nodes:
            main: list[Output] = []
            side: dict[Any, list[Output]] = {}
            for edge in chain_edges:
                if edge.source_id == node.id:
                    link = ChainingOutput(self.operators[edge.target_id], metrics(node.id), metrics(edge.target_id))
                    self._route(edge, link, main, side)
            for edge in network_edges:
                if edge.source_id == node.id:
                    out = network_output(edge)
                    if isinstance(out, RecordWriterOutput):
                        out.upstream = metrics(node.id)
                    self._route(edge, out, main, side)
            combined = self._combine(main, side)
            if combined is NO_OUTPUT and operator_metrics is not None:
                combined = _NoOutput(metrics(node.id))
            self.outputs[node.id] = typed_output(combined, self.operators[node.id], node.output_type, side)

    @staticmethod
    def _route(edge: StreamEdge, out: Output, main: list[Output], side: dict[Any, list[Output]]) -> None:
        if edge.output_tag is None:
            main.append(out)
        else:
            side.setdefault(edge.output_tag, []).append(out)

    @staticmethod
    def _combine(main: list[Output], side: dict[Any, list[Output]]) -> Output:
        if not main and not side:
            return NO_OUTPUT
        if len(main) == 1 and not side:
            return main[0]  # the common case: a direct link, no loop on the hot path
        return RouterOutput(main, side)

    @property
    def head(self) -> StreamOperator:
        """The first operator: it receives the task's input (or is the source)."""
        return self.operators[self.nodes[0].id]

    def in_order(self) -> list[tuple[StreamNode, StreamOperator]]:
        """(node, operator) pairs head first."""
        return [(n, self.operators[n.id]) for n in self.nodes]
