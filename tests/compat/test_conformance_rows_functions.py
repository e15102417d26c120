"""Rows, rich functions, co-process timers, side outputs, parallel unions and execution plans (issue 13).

Each program in ``programs/`` (``rows_*``, ``rich_*``, ``union_*``, ``plan_*``) runs as a user runs
it; the expected output is computed here by plain Python from the programs' data, following
what PyFlink 2.3 does:

- a ``Types.ROW``/``ROW_NAMED`` record is printed as ``<kind>[f1,f2]`` with Python's ``str`` of
  each field (``DataStream._align_output_type``), and a Row that crossed a typed boundary has
  its type's field names (``Types.ROW`` names them ``f0``, ``f1`` ...), so its repr is
  ``Row(f0=..., f1=...)``; its RowKind survives the boundary;
- the runtime context of a subtask reports the task name of its chain (``describe``,
  ``KEYED PROCESS -> Sink: Print to Std. Out``), max parallelism 128, attempt 0 and
  ``name (i/n)#0``; a key without ``key_type`` goes to the subtask of its key group, where
  Flink hashes the cloudpickled key wrapped in a one-field Row (:func:`pyflink_subtask`);
- timers registered at event time fire when the final watermark (``Long.MAX_VALUE``) passes them;
- ``get_execution_plan()`` shows PyFlink's own Python operators (the key-by operator, the maps of
  ``print()`` and ``get_side_output``) and merges consecutive Python operators into one node
  (Flink's ``PythonOperatorChainingOptimizer``): :func:`test_execution_plans_have_pyflinks_shape`.

All seven programs were run under real PyFlink 2.3 (Java 17) with
``scripts/compare_with_pyflink.py``; their outputs equal these expectations (plans: the
structure, ids aside).
"""

from __future__ import annotations

import collections
import json
import re

import cloudpickle

from tests.compat.test_pyflink_programs import java_tuple, load, printed_row, run, sections, unordered

LONG_MAX = 2 ** 63 - 1


# --------------------------------------------------------------------------- helpers
def _murmur(code: int) -> int:
    """Flink's MathUtils.murmurHash (non-negative int)."""
    m = 0xFFFFFFFF
    code &= m
    code = (code * 0xCC9E2D51) & m
    code = ((code << 15) | (code >> 17)) & m
    code = (code * 0x1B873593) & m
    code = ((code << 13) | (code >> 19)) & m
    code = (code * 5 + 0xE6546B64) & m
    code ^= 4
    code ^= code >> 16
    code = (code * 0x85EBCA6B) & m
    code ^= code >> 13
    code = (code * 0xC2B2AE35) & m
    code ^= code >> 16
    signed = code - (1 << 32) if code & 0x80000000 else code
    return signed if signed >= 0 else (-signed if signed != -(1 << 31) else 0)


def pyflink_subtask(key, parallelism: int, max_parallelism: int = 128) -> int:
    """The subtask PyFlink sends an untyped key_by key to: Row(cloudpickle(key)).hashCode()
    = 62 + Arrays.hashCode(bytes), murmur-hashed to a key group, key group to subtask."""
    h = 1
    for b in cloudpickle.dumps(key):
        h = (31 * h + (b - 256 if b > 127 else b)) & 0xFFFFFFFF
    return _murmur(62 + h) % max_parallelism * parallelism // max_parallelism


def row_repr(**fields) -> str:
    return "Row(" + ", ".join(f"{k}={v!r}" for k, v in fields.items()) + ")"


# --------------------------------------------------------------------------- rows
def test_rows_kinds_nested_and_projections():
    program = load("rows_kinds_nested.py")
    kinds = ["+I", "-U", "+U", "-D"]
    kind_names = ["INSERT", "UPDATE_BEFORE", "UPDATE_AFTER", "DELETE"]
    expected = []
    zone_totals: dict = collections.defaultdict(int)
    for sensor, zone, value, tags in program.READINGS:
        as_dict = {"sensor": sensor, "zone": zone, "value": value, "tags": tags}
        expected.append(f"access {(sensor, zone, value, tags, [zone, value], True, False, 4)} dict={as_dict}")
        expected.append("untyped " + row_repr(**as_dict))           # untyped: str(row) is its repr
        expected.append(f"<Row({sensor!r}, {value!r})>")             # a Row without names
        expected.append(f"class {row_repr(sensor=sensor, value=value)} {row_repr(sensor=sensor)} "
                        f"<Row('sensor', 'value')>")                 # a row class given fewer values
        expected.append(row_repr(sensor=sensor, tags=tags))
        expected.append(printed_row(sensor, zone, value, tags))

        where = row_repr(f0=zone, f1=value)                          # Types.ROW names its fields f0, f1
        extra = row_repr(low=value - 1, high=value + 1)
        counts = {t: len(t) for t in tags[:1]}
        expected.append(printed_row(sensor, where, extra, counts))
        nested = {"id": sensor, "where": {"f0": zone, "f1": value}, "extra": {"low": value - 1, "high": value + 1},
                  "counts": counts}
        expected.append(f"nested {where} {extra} {zone} {value + 1} {nested} {counts}")

        expected.extend(printed_row(sensor, position, tag) for position, tag in enumerate(tags))

        kind = value % 4                                             # the kind survives the typed boundary
        expected.append(f"{kinds[kind]}[{sensor},{value}]")
        expected.append(f"+U[{zone},{-value}]")
        expected.append(f"kind {kinds[kind]} {kind_names[kind]} {row_repr(f0=sensor, f1=value)}")
        expected.append(f"kind +U UPDATE_AFTER {row_repr(f0=zone, f1=-value)}")

        zone_totals[zone] += value                                   # key_by a Row field + reduce
        expected.append(printed_row(zone, zone_totals[zone]))

        # named rows are equal whatever their field order; a kind or a missing name makes rows unequal
        expected.append("equal True True False False True False 2")
        expected.append(java_tuple(value, sensor))                   # project(2, 0): a Java tuple
        expected.append(f"projected {(zone,)!r}")                    # a projected TUPLE seen in Python
    assert unordered(run("rows_kinds_nested.py")) == sorted(expected)


def test_row_kinds_through_reduce_pickling_and_collect():
    events = load("rows_changelog_collect.py").EVENTS
    expected = [printed_row(*e) for e in events]                       # None and floats by Python's str
    totals: dict = {}
    for key, amount, note in events:
        kind = "+U" if key in totals else "+I"                         # the reducer sets UPDATE_AFTER
        totals[key] = totals[key] + amount if key in totals else amount
        expected.append(f"{kind}[{key},{totals[key]},{note}]")
        expected.append(f"untyped {kind} {row_repr(key=key, amount=totals[key], note=note)} {note is None}")
        expected.append(f"pickled -D <Row({key!r}, {amount!r})>")      # pickling keeps the kind
        parts = "[" + ", ".join(row_repr(n=x) for x in (amount, amount * 2)) + "]"
        expected.append(f"+I[{key},{parts},{ {key: [1, 2]} }]")
    lines = run("rows_changelog_collect.py")
    first_job, collected = lines[:len(expected)], lines[len(expected):]
    assert sorted(first_job) == sorted(expected)
    # execute_and_collect gives Rows with their kind and the type's field names, in order
    assert collected == [f"collected -U {row_repr(f0=key, f1=amount)} {amount}" for key, amount, _ in events]


# --------------------------------------------------------------------------- rich functions
def test_runtime_context_and_metrics_of_rich_functions():
    lines = run("rich_runtime_context.py")
    map_lines = [f"map task='describe' subtasks=2 max=128 index={i} attempt=0 "
                 f"with_subtasks='describe ({i + 1}/2)#0' unit='celsius' missing='fallback'" for i in range(2)]
    assert lines[:2] == sorted(map_lines)

    per_subtask: dict = collections.defaultdict(list)
    counts: dict = collections.defaultdict(int)
    for value in range(10):
        key = value % 4
        index = pyflink_subtask(key, 2)
        counts[index] += 2                                           # counter.inc(2) per record of the subtask
        per_subtask[index].append(f"{index + 1}> key {key} value {value} on subtask {index} of "
                                  f"'KEYED PROCESS -> Sink: Print to Std. Out' count {counts[index]} over {value > 5}")
    keyed = lines[2:]
    for index, expected in per_subtask.items():                      # in order within each subtask
        assert [line for line in keyed if line.startswith(f"{index + 1}> ")] == expected
    assert len(keyed) == 10


def test_task_names_are_pyflinks_chain_names():
    """A task is named after its chain as PyFlink builds it: consecutive Python operators are one
    operator (``first, Filter, Map``), PyFlink's key-by operator and print map are in the chain,
    chained outputs in the order the program made them; job parameters come from the Configuration."""
    words = ["x", "y"]
    sink = "Sink: Print to Std. Out"

    def seen(label, task, parallelism=1, index=0):
        return f"{label}: {task!r} {task + f' ({index + 1}/{parallelism})#0'!r} {parallelism} lab 3"

    source_chain = (f"Source: Collection Source -> (first, Filter, Map -> {sink}, "
                    f"_stream_key_by_map_operator, Map, Map)")
    expected = [f"{seen('second', source_chain)} <- {seen('first', source_chain)} <- {w}" for w in words]
    expected += [f"{seen('keyed', f'KEYED PROCESS, Map, Map -> {sink}')} <- {w}".upper() for w in words]
    expected += [f"{seen('co', f'Co-Map, Map -> {sink}')} <- {v}" for v in words + [w * 2 for w in words]]
    expected += [seen("alone", "alone, Map", 2, i) for i in range(2)]
    assert sorted(run("rich_task_names.py")) == sorted(expected)


def test_keyed_co_process_timers_and_side_outputs():
    program = load("rich_co_process_side_outputs.py")
    expected = []
    timers: dict = collections.defaultdict(set)
    for account, ts, amount in program.ORDERS:
        expected.append(f"order {account} {amount} at {ts}")
        timers[account].add(ts + program.DUE_AFTER_MS)
    for account, ts, amount in program.PAYMENTS:
        expected.append(f"payment {account} {amount} at {ts}")
        if amount < 10:
            expected.append(f"side tiny payment {account} {amount}")
        timers[account].add(ts + program.DUE_AFTER_MS)
    for account, due in timers.items():                              # all fire with the final watermark
        for t in due:
            expected.append(f"due {account} at {t} ts={t} domain=TimeDomain.EVENT_TIME watermark={LONG_MAX}")
            if account == "acme":
                expected.append(f"side reminder acme {t}")
    for account, ts, amount in program.ORDERS:
        if amount < 20:
            expected.append(printed_row(account, amount))           # typed ROW_NAMED side output
        if amount % 2:
            expected.append(str((account, amount, "odd")))          # untyped side output
        expected.append(java_tuple(account, amount))                # TUPLE main output
        expected.append(f"KEYED {account.upper()} {amount}")        # keyed process side output, mapped
        expected.append(str(amount * 100))
        expected.append(f"left {(account, ts, amount)!r}")          # a TUPLE input seen in Python
    for account, _ts, amount in program.PAYMENTS:
        expected.append(java_tuple(account, amount))                # typed TUPLE side output of a co-process
    assert unordered(run("rich_co_process_side_outputs.py")) == sorted(expected)


# --------------------------------------------------------------------------- unions
def test_unions_of_different_parallelisms_and_with_itself():
    lines = run("union_parallel.py")
    one = ["a", "b", "c"]
    unioned = one + [f"two-{n}" for n in range(5)] + [f"three-{n}" for n in (10, 20, 30, 40) if n != 20]
    printed_in_parallel = [line for line in lines if re.match(r"\d> ", line)]
    assert all(line[:3] in ("1> ", "2> ") for line in printed_in_parallel)
    assert unordered(printed_in_parallel) == sorted("u " + s for s in unioned)
    rest = [line for line in lines if not re.match(r"\d> ", line)]
    pickled = [(1, "x"), (2, "y")]
    assert sorted(rest) == sorted(["self " + s.upper() for s in one] * 2
                                  + [str(t) for t in pickled] + [str((t[0] * 10, t[1])) for t in pickled])


# --------------------------------------------------------------------------- plans
SOURCE, SINK, KEY_BY = "Source: Collection Source", "Sink: Print to Std. Out", "_stream_key_by_map_operator"

# per pipeline: (type, parallelism, [(index of the predecessor in the node list, ship strategy)])
EXPECTED_PLANS = {
    # three Python operators in a row are one node; a typed print needs no map
    "linear": [(SOURCE, 1, []), ("Map, Filter, Map", 1, [(0, "FORWARD")]), (SINK, 1, [(1, "FORWARD")])],
    # key_by adds the key-by operator at its input's parallelism; reduce keeps the TUPLE type
    "keyed": [(SOURCE, 1, []), (KEY_BY, 1, [(0, "FORWARD")]), ("Reduce", 2, [(1, "HASH")]),
              (SINK, 1, [(2, "REBALANCE")])],
    # explicit partitionings stay; the untyped print's map merges into the last map
    "partitions": [(SOURCE, 1, []), ("Map", 3, [(0, "REBALANCE")]), ("Map", 2, [(1, "SHUFFLE")]),
                   ("after broadcast, Map", 1, [(2, "BROADCAST")]), (SINK, 1, [(3, "FORWARD")])],
    "unions": [(SOURCE, 1, []), (SOURCE, 1, []), ("Map", 2, [(1, "REBALANCE")]),
               ("Map, Map", 1, [(0, "FORWARD"), (2, "REBALANCE")]), (SINK, 1, [(3, "FORWARD")])],
    "connected": [(SOURCE, 1, []), (SOURCE, 1, []), ("Co-Map", 1, [(0, "FORWARD"), (1, "FORWARD")]),
                  (SINK, 1, [(2, "FORWARD")])],
    # the side output's identity map, the user's map and the print map are one node; PROCESS feeds
    # two outputs so nothing merges into it
    "side_outputs": [(SOURCE, 1, []), ("PROCESS", 1, [(0, "FORWARD")]), ("Map, Map, Map", 1, [(1, "FORWARD")]),
                     (SINK, 1, [(1, "FORWARD")]), (SINK, 1, [(2, "FORWARD")])],
    "keyed_then_map": [(SOURCE, 1, []), (KEY_BY, 1, [(0, "FORWARD")]), ("Map, Map, Map", 1, [(1, "HASH")]),
                       (SINK, 1, [(2, "FORWARD")])],
    # an operator feeding two does not merge with either
    "two_consumers": [(SOURCE, 1, []), ("Map", 1, [(0, "FORWARD")]), ("Map", 1, [(1, "FORWARD")]),
                      ("Filter", 1, [(1, "FORWARD")]), (SINK, 1, [(2, "FORWARD")]), (SINK, 1, [(3, "FORWARD")])],
    # the key-by operator merges into the map before it (parallelism 3); the keyed map heads the next node
    "parallel_keyed": [(SOURCE, 1, []), ("Map, " + KEY_BY, 3, [(0, "REBALANCE")]),
                       ("Map, FlatMap, Map", 2, [(1, "HASH")]), (SINK, 2, [(2, "FORWARD")])],
    # disable_chaining and another parallelism stop merging
    "unchained": [(SOURCE, 1, []), ("Map", 1, [(0, "FORWARD")]), ("Map", 1, [(1, "FORWARD")]),
                  ("Map", 2, [(2, "REBALANCE")]), (SINK, 1, [(3, "REBALANCE")])],
    # a TimestampAssigner runs in Python before the watermark operator; a window is named after its
    # assigner, sum() is a Reduce; both merge with the maps after them
    "event_time": [(SOURCE, 1, []), ("Extract-Timestamp", 1, [(0, "FORWARD")]),
                   ("Timestamps/Watermarks", 1, [(1, "FORWARD")]), ("Remove-Timestamp", 1, [(2, "FORWARD")]),
                   (KEY_BY, 1, [(3, "FORWARD")]), (KEY_BY, 1, [(0, "FORWARD")]),
                   ("TumblingEventTimeWindows, Map, Map", 1, [(4, "HASH")]), ("Reduce, Map, Map", 1, [(5, "HASH")]),
                   (SINK, 1, [(6, "FORWARD")]), (SINK, 1, [(7, "FORWARD")])],
}


def test_execution_plans_have_pyflinks_shape():
    """Nodes come in PyFlink's order: by id, each after its inputs, sinks last, where ids follow the
    order the program made the operators (PyFlink's own ones included) and merged nodes come last."""
    plans = sections(run("plan_shapes.py"), r"== (\w+)")
    assert list(plans) == list(EXPECTED_PLANS)
    for name, text in plans.items():
        nodes = json.loads("\n".join(text))["nodes"]
        index = {n["id"]: i for i, n in enumerate(nodes)}
        assert len(index) == len(nodes), f"{name}: ids are not unique"
        shape = [(n["type"], n["parallelism"], [(index[p["id"]], p["ship_strategy"]) for p in n.get("predecessors", [])])
                 for n in nodes]
        assert shape == EXPECTED_PLANS[name], name
        for n in nodes:
            if not n["type"].startswith("TumblingEventTimeWindows"):  # a window's contents is its description
                assert n["contents"] == n["type"]
            assert n["pact"] == ("Data Source" if n["type"] == SOURCE else "Data Sink" if n["type"] == SINK
                                 else "Operator")
            assert all(p["side"] == "second" for p in n.get("predecessors", []))
            assert ("predecessors" in n) == (n["type"] != SOURCE)
        merged = [n["id"] for n in nodes if ", " in n["type"]]
        others = [n["id"] for n in nodes if ", " not in n["type"]]
        assert all(m > o for m in merged for o in others), f"{name}: a merged node gets a new, larger id"
