"""Record-at-a-time fusion of chained stateless operators: ``map -> filter -> map`` as one loop.

A chain links its operators batch by batch (:mod:`.chain`): each operator runs one
builtin loop over the whole batch (``list(map(f, batch))``) and hands the result to the
next. For a run of chained ``map`` / ``filter`` / ``flat_map`` operators without keyed
state this module compiles one Python loop instead, which takes each record through every
function of the run before the next record::

    for v0 in values:
        v1 = f0(v0)          # map
        if not f1(v1):       # filter
            continue
        append(f2(v1))       # map

That loop is what a plain Python program would write: no list between the operators, and
on CPython 3.11+ the user functions are called from Python code (inlined frames), which
costs about half of a call from C. It is also the order PyFlink runs chained Python
functions in: record by record through the chain, so side effects of the functions
(``print`` in a map and in the next filter) interleave as they do in PyFlink.

Declared output types in between are not converted, as in PyFlink: PyFlink chains
consecutive Python functions into one Python operator and encodes records with a coder only
where they leave it (to the network, a Java sink, a side output), with the type of the last
function's output. Seen under PyFlink 2.3: ``map(lambda x: x * 2, output_type=Types.DOUBLE())``
followed by a chained ``map`` hands that map the int ``2``, and ``map(f,
output_type=Types.LONG())`` of a bool hands on the bool. The run's last operator still
converts what it emits (its :mod:`.typed_output`); a run ending in a filter converts with the
filter's type, its input's.

What does not change: every operator of the run is still set up, opened, closed,
checkpointed and passed watermarks as before; only its ``process_batch`` is replaced (the
first operator's, by the fused loop; the others are no longer called). Each operator's
``records_in`` / ``records_out`` count what it would have counted. A user function that
raises fails the task with the same message as the unfused operator, naming that
operator and its record: the loop's line tells which function raised, its frame the value
it was called with. A run ends at an operator with keyed state (after ``key_by``), a fork
or side output, and any other kind of operator.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from streamkernel.runtime.operators.base import StreamOperator
from streamkernel.runtime.operators.contexts import wrap_user_error
from streamkernel.runtime.operators.simple import FilterOperator, FlatMapOperator, MapOperator
from streamkernel.runtime.tasks.chain import ChainingOutput, OperatorChain
from streamkernel.runtime.tasks.typed_output import TypedOutput

__all__ = ["fuse_stateless_runs", "fusable_runs", "FusedRun"]

_KINDS: dict[type, str] = {MapOperator: "map", FilterOperator: "filter", FlatMapOperator: "flat_map"}


def _fusable(operator: StreamOperator) -> bool:
    return type(operator) in _KINDS and getattr(operator, "_key_selector", None) is None


def fusable_runs(chain: OperatorChain) -> list[list[StreamOperator]]:
    """The runs of two or more operators of ``chain`` that :func:`fuse_stateless_runs` fuses, head first.

    An operator continues a run when it is the only destination of the previous operator's
    main output (a :class:`~.chain.ChainingOutput`, possibly behind the previous operator's
    declared output type: no fork, no side output) and is itself a map, filter or flat_map
    without keyed state.
    """
    runs: list[list[StreamOperator]] = []
    absorbed: set[int] = set()
    for node, operator in chain.in_order():
        if id(operator) in absorbed or not _fusable(operator):
            continue
        run = [operator]
        out = chain.outputs[node.id]
        while True:
            link = out.inner if type(out) is TypedOutput and not out.has_side_types() else out
            if type(link) is not ChainingOutput or not _fusable(link.operator):
                break
            run.append(link.operator)
            absorbed.add(id(link.operator))
            out = link.operator.output
        if len(run) > 1:
            runs.append(run)
    return runs


def fuse_stateless_runs(chain: OperatorChain) -> list["FusedRun"]:
    """Replace the batch loops of every fusable run of the opened ``chain`` by one fused loop each.

    Called after the operators were opened (their user methods are bound then) and before
    the first record. Every link into a run's first operator (the previous operator's
    :class:`~.chain.ChainingOutput`, or the task input, which reads the head's
    ``process_batch`` when it starts) then calls the fused loop.
    """
    fused = []
    for run in fusable_runs(chain):
        fused_run = FusedRun(run)
        first = run[0]
        first.process_batch = fused_run.process_batch  # type: ignore[method-assign]
        for output in _chaining_outputs(chain):
            if output.operator is first:
                output.emit = fused_run.process_batch
        fused.append(fused_run)
    return fused


def _chaining_outputs(chain: OperatorChain) -> list[ChainingOutput]:
    """Every ChainingOutput of ``chain``, also those inside a TypedOutput or a RouterOutput."""
    found: list[ChainingOutput] = []
    pending: list[Any] = list(chain.outputs.values())
    while pending:
        output = pending.pop()
        if type(output) is ChainingOutput:
            found.append(output)
        pending.extend(getattr(output, "everyone", ()))
        inner = getattr(output, "inner", None)
        if inner is not None:
            pending.append(inner)
    return found


class FusedRun:
    """One compiled loop for a run of map / filter / flat_map operators (see the module docstring)."""

    def __init__(self, operators: list[StreamOperator]) -> None:
        self.operators = operators
        self.kinds = [_KINDS[type(op)] for op in operators]
        self._outputs = [op.output for op in operators]  # as wired: a swap means a peek (below)
        self._metrics = [op.context.metrics for op in operators]
        functions = [op._call for op in operators]  # type: ignore[attr-defined]  # bound in open()
        source, self._stage_of_line, self._counted = _loop_source(self.kinds)
        namespace: dict[str, Any] = {}
        exec(compile(source, f"<fused {' -> '.join(self.kinds)}>", "exec"), namespace)  # noqa: S102
        self._loop: Callable[..., tuple[list, Optional[list], list[int]]] = namespace["make"](*functions)
        #: the fused loop's Python source (for the curious: ``print(run.source)``)
        self.source = source

    def process_batch(self, values: list, timestamps: Optional[list]) -> None:
        """Run the batch through every function of the run; emit what the last one produced.

        While an operator's output is swapped (``%flink peek`` taps it, :mod:`.peek`), the batch
        takes the unfused path instead, operator by operator, so the tap sees what it emits.
        """
        for operator, output in zip(self.operators, self._outputs):
            if operator.output is not output:
                first = self.operators[0]
                type(first).process_batch(first, values, timestamps)
                return
        try:
            out, out_ts, counts = self._loop(values, timestamps)
        except Exception as exc:
            raise self._user_error(exc) from exc
        # counts[i]: records that entered operator i; counts[i + 1]: that left it (see _loop_source)
        counts[0] = len(values)
        kinds, last = self.kinds, len(out)
        for i, metrics in enumerate(self._metrics):
            if kinds[i] == "map":
                counts[i + 1] = counts[i]
            elif i not in self._counted:
                counts[i + 1] = last  # only maps follow: as many as the run emits
            metrics.records_in += counts[i]
            metrics.records_out += counts[i + 1]
        if out:
            self._outputs[-1].emit(out, out_ts)

    def _user_error(self, exc: Exception) -> Exception:
        """The unfused operator's error: which stage raised, on which of its input values."""
        tb = exc.__traceback__
        code = self._loop.__code__
        while tb is not None and tb.tb_frame.f_code is not code:
            tb = tb.tb_next
        if tb is None:  # pragma: no cover - the loop itself cannot raise outside a stage
            return exc
        stage, variable = self._stage_of_line[tb.tb_lineno]
        record = tb.tb_frame.f_locals.get(variable)
        return wrap_user_error(self.operators[stage], record, exc)


def _loop_source(kinds: list[str]) -> tuple[str, dict[int, tuple[int, str]], set[int]]:
    """The source of ``make(f0, f1, ...)``, which returns the fused loop over a batch; per line
    that calls a stage's function, the stage's index and the variable holding the value it was
    called with; and the stages whose output the loop counts.

    The loop returns ``(out, out_timestamps, counts)``; ``counts[i + 1]`` is how many records
    left stage ``i`` for a filter or flat_map followed by another one (what left any other
    stage follows from the batch's size, the run's output and the maps' one-to-one).
    """
    last = len(kinds) - 1
    counted = {i for i, kind in enumerate(kinds) if kind != "map" and any(k != "map" for k in kinds[i + 1:])}
    lines = [f"def make({', '.join(f'f{i}' for i in range(len(kinds)))}):",
             "    def loop(values, timestamps):",
             "        out = []",
             "        append = out.append",
             *(f"        n{i + 1} = 0" for i in sorted(counted)),
             "        if timestamps is None:",
             "            out_ts = None",
             "            for v0 in values:"]
    stages: dict[int, tuple[int, str]] = {}

    def body(timed: bool) -> None:
        indent, current = " " * 16, "v0"
        for i, kind in enumerate(kinds):
            stages[len(lines) + 1] = (i, current)  # compile() numbers lines from 1
            if kind == "map" and i == last and not timed:
                lines.append(f"{indent}append(f{i}({current}))")
                return
            if kind == "map":
                lines.append(f"{indent}v{i + 1} = f{i}({current})")
                current = f"v{i + 1}"
            elif kind == "filter":
                lines.append(f"{indent}if not f{i}({current}):")
                lines.append(f"{indent}    continue")
            else:  # flat_map: the stages after it run once per value it produces
                lines.append(f"{indent}for v{i + 1} in f{i}({current}):")
                indent += "    "
                current = f"v{i + 1}"
            if i in counted:
                lines.append(f"{indent}n{i + 1} += 1")
        lines.append(f"{indent}append({current})")
        if timed:
            lines.append(f"{indent}append_ts(t)")

    body(False)
    lines += ["        else:",
              "            out_ts = []",
              "            append_ts = out_ts.append",
              "            for v0, t in zip(values, timestamps):"]
    body(True)
    lines.append(f"        counts = [0] * {len(kinds) + 1}")
    lines += [f"        counts[{i + 1}] = n{i + 1}" for i in sorted(counted)]
    lines += ["        return out, out_ts, counts",
              "    return loop"]
    return "\n".join(lines) + "\n", stages, counted
