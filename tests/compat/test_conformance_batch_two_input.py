"""BATCH execution (``execution.runtime-mode: BATCH``) of two-input operators, conformance with PyFlink 2.3.

Expected outputs are computed here from the programs' data, following Flink's batch input
handling (``MultiInputSortingDataInput``; broadcast inputs have priority) as measured with
PyFlink 2.3 (``/work/pyflink-run``; its output equals these expectations):

- keyed connect (``connect(...).key_by(k1, k2)``): each input is sorted by key (Flink's order of
  serialized keys, see test_conformance_batch.py) then timestamp; the two are merged through a
  priority queue of the inputs' heads where, on an equal (key, timestamp), the head already
  waiting goes first (which input's first head enters the queue first depends on timing in
  Flink: the programs make the first two heads differ). Keyed state is per key and shared by both
  inputs; at the end of a key its event-time timers fire (watermark at the maximum), then its
  processing-time timers. PyFlink's Python worker may print a key's timer lines after the next
  key's first record, so timers are checked per key (as a set, after the key's last element);
- broadcast (keyed or not): every broadcast record first, then the other input (sorted by key,
  key by key, when keyed; in arrival order otherwise);
- non-keyed connect: one record of input 1, one of input 2, ... until one input runs out.
"""

from __future__ import annotations

import importlib.util
import pathlib

_here = pathlib.Path(__file__).parent
_spec = importlib.util.spec_from_file_location("conformance_batch_helpers", _here / "test_conformance_batch.py")
_batch = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_batch)
load, run, section, key_bytes, compare_keys = _batch.load, _batch.run, _batch.section, _batch.key_bytes, _batch.compare_keys
grouped = _batch.grouped
MIN_LONG, MAX_LONG = _batch.MIN_LONG, _batch.MAX_LONG


def sorted_input(records, timestamp_of):
    """One input as Flink's sorter gives it: by key bytes, then timestamp (stable)."""
    return [r for _, rs in grouped(records, lambda r: r[0], timestamp_of=timestamp_of) for r in rs]


def merged(first, second, timestamp_of):
    """[(input, record)] in the order the queue of heads (java.util.PriorityQueue) yields them."""
    inputs = [sorted_input(first, timestamp_of), sorted_input(second, timestamp_of)]

    def before(a, b):  # strictly smaller (key bytes, timestamp)
        c = compare_keys(key_bytes(a[0]), key_bytes(b[0]))
        return c < 0 or (c == 0 and timestamp_of(a) < timestamp_of(b))

    queue, out = [], []  # queue of input numbers, the root first

    def add(i):
        if inputs[i]:
            queue.append(i)
            if len(queue) == 2 and before(inputs[i][0], inputs[queue[0]][0]):
                queue.reverse()

    for i in ((1, 0) if len(second) < len(first) else (0, 1)):  # the shorter input ends first
        add(i)
    while queue:
        i = queue.pop(0)
        out.append((i + 1, inputs[i].pop(0)))
        add(i)
    return out


def check_keyed_process(lines, name, first, second, timestamp_of, timestamp_text, program):
    elements, counts, last_element_at = [], {}, {}
    for i, r in merged(first, second, timestamp_of):
        counts[r[0]] = counts.get(r[0], 0) + 1
        elements.append(f"{name} in{i} key={r[0]} v={r} ts={timestamp_text(r)} wm={MIN_LONG} n={counts[r[0]]}")
    mine = section(lines, name)
    assert [line for line in mine if " timer " not in line] == elements
    for key, n in counts.items():
        values = [r[1] for r in first + second if r[0] == key]
        expected = sorted(
            [f"{name} timer key={key} at={program.EVENT_TIMER + v} TimeDomain.EVENT_TIME wm={MAX_LONG} n={n}"
             for v in values]
            + [f"{name} timer key={key} at={program.PROCESSING_TIMER + v} TimeDomain.PROCESSING_TIME wm={MAX_LONG} n={n}"
               for v in values])
        timers = [line for line in mine if line.startswith(f"{name} timer key={key} ")]
        assert sorted(timers) == expected
        last_element_at[key] = max(j for j, line in enumerate(mine) if f" key={key} " in line and " timer " not in line)
        assert all(mine.index(t) > last_element_at[key] for t in timers)


def test_batch_two_input_operators():
    program = load("batch2_connected.py")
    lines = run("batch2_connected.py")
    s1, s2 = program.S1, program.S2

    def ts(r):
        return r[2]

    check_keyed_process(lines, "kcp", s1, s2, ts, ts, program)
    check_keyed_process(lines, "nots", program.N1, program.N2, lambda r: MIN_LONG, lambda r: MIN_LONG, program)
    order = merged(s1, s2, ts)
    assert section(lines, "comap") == [f"comap m{i} {r}" for i, r in order]
    assert section(lines, "coflat") == [f"coflat f{i} {r}" for i, r in order]

    rules = sorted(r[1] for r in s2)
    keyed_side = [f"kbc el key={key} v={r} ts={r[2]} n={n + 1} rules={rules}"
                  for key, rs in grouped(s1, lambda r: r[0], timestamp_of=ts) for n, r in enumerate(rs)]
    kbc = section(lines, "kbc")
    assert [line for line in kbc if " timer " not in line] == [f"kbc bc v={r}" for r in s2] + keyed_side
    assert sorted(line for line in kbc if " timer " in line) == sorted(
        f"kbc timer key={r[0]} at={program.EVENT_TIMER + r[1]} n={sum(1 for x in s1 if x[0] == r[0])}" for r in s1)

    assert section(lines, "nbc") == [f"nbc bc v={r}" for r in s2] + [f"nbc el v={r} rules={rules}" for r in s1]

    alternating = [x for pair in zip([(1, r) for r in s1], [(2, r) for r in s2]) for x in pair]
    alternating += [(1, r) for r in s1[len(s2):]] + [(2, r) for r in s2[len(s1):]]
    assert section(lines, "plain") == [f"plain m{i} {r}" for i, r in alternating]
    assert section(lines, "cop") == [f"cop p{i} {r} ts={r[2]}" for i, r in alternating]


# --------------------------------------------------------------------------- parallelism in BATCH
def test_batch_parallelism_of_operators_whose_parallelism_was_not_set():
    """Flink's adaptive batch scheduler decides it (env.set_parallelism(2) is only the upper bound):
    1 for small data, unless the operator's forward group holds an operator whose parallelism was
    set, or a source (which takes the default parallelism). PyFlink fuses a Python map whose
    parallelism was set with the Python map to str that print() adds after an untyped stream:
    the fused operator's parallelism counts as not set."""
    program = load("batch2_parallelism.py")
    lines = run("batch2_parallelism.py")
    values = program.VALUES
    prefix = _batch._helpers.SUBTASK_PREFIX

    def body(name):
        found = [line for line in lines if prefix.sub("", line).startswith(name + " ")]
        return found, sorted(prefix.sub("", line) for line in found)

    at_one = {
        "env_only": [f"env_only n=1 v={v}" for v in values],
        "map_set": [f"map_set n=1 v={v}" for v in values],  # fused with print()'s map to str
        "after_rebalance": [f"after_rebalance n=1 v=first n=2 v={v}" for v in values],  # set before a shuffle
        "reduced": [f"reduced n=1 v={sum(v for v in values if v % 3 == k)}" for k in range(3)],
    }
    at_two = {
        "sink_set": [f"sink_set n=2 v={v}" for v in values],  # the sink's forward group
        "typed_map_set": [f"typed_map_set n=2 v={v}" for v in values],  # typed: print() adds no map
        "sequence": [f"sequence n=2 v={v}" for v in range(6)],  # a parallel source: the default
    }
    for name, expected in at_one.items():
        found, texts = body(name)
        assert found == [prefix.sub("", line) for line in found], f"{name}: parallelism 1 prints no prefix"
        assert texts == sorted(expected)
    for name, expected in at_two.items():
        found, texts = body(name)
        assert all(prefix.match(line) for line in found), f"{name}: parallelism 2 prints N> prefixes"
        assert texts == sorted(expected)
