"""PyFlink-style DataStream programs, run as a user runs them, checked against PyFlink's semantics.

Every program in ``programs/`` is written the way a PyFlink user writes one, importing from
``streamkernel.`` exactly where a PyFlink program imports from ``pyflink.``; each names in
its one-line docstring the PyFlink features it exercises. Each runs as a script in a
subprocess of this venv's python and must exit 0.

The expected output is computed here from the programs' input data by plain Python,
following what PyFlink documents and does, never copied from streamkernel's output. It is
written the way PyFlink writes records:

- no declared type (pickled records): ``DataStream.print()`` maps each to Python's
  ``str(record)``: ``('a', 1)``;
- ``Types.ROW``/``Types.ROW_NAMED``: ``print()`` maps each Row to
  ``'{}[{}]'.format(row_kind, ','.join(str(f) for f in fields))``: ``+I[a,1]``
  (PyFlink's ``DataStream._align_output_type``);
- ``Types.TUPLE`` and basic types are printed by Java: ``Tuple.toString()`` is ``(a,1)``
  (:func:`java_tuple`); a ``FileSink`` with ``Encoder.simple_string_encoder()`` writes the
  same text;
- a ``N> `` prefix names the printing subtask when the sink runs in parallel; the order
  across subtasks is not defined, so those outputs are compared as sorted lines without
  the prefix (:func:`unordered`). Outputs of a parallelism-1 job are compared in order
  where Flink defines the order (record-at-a-time operators after a single source).

Programs with event-time timers or early-firing triggers choose their watermark strategy
and data so that no timer can be due before the bounded input ends, whatever the timing of
periodic watermarks: the expected output is then the same on every run, in Flink too.
"""

from __future__ import annotations

import collections
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest


PROGRAMS = Path(__file__).parent / "programs"
REPO = Path(__file__).resolve().parents[2]
TIMEOUT_S = 180  # a program takes seconds; a loaded machine can be many times slower
SUBTASK_PREFIX = re.compile(r"^\d+> ")


# --------------------------------------------------------------------------- helpers
def run(program: str, *args: str, cwd: Path | None = None) -> list[str]:
    """Run ``programs/<program>`` with the venv's python; assert exit 0; its stdout lines."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run([sys.executable, str(PROGRAMS / program), *args], cwd=cwd or REPO, env=env,
                          capture_output=True, text=True, timeout=TIMEOUT_S)
    assert proc.returncode == 0, f"{program} exited {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    return proc.stdout.splitlines()


def unordered(lines: list[str]) -> list[str]:
    """The lines without Flink's ``N> `` subtask prefix, sorted (their order is not defined)."""
    return sorted(SUBTASK_PREFIX.sub("", line) for line in lines)


def sections(lines: list[str], header: str) -> dict[str, list[str]]:
    """Split a program's output at the lines matching ``header`` (a regex with one group)."""
    out: dict[str, list[str]] = {}
    current = None
    for line in lines:
        match = re.fullmatch(header, line)
        if match:
            current = match.group(1)
            out[current] = []
        elif current is not None:
            out[current].append(line)
    return out


def java_tuple(*fields) -> str:
    """Java's ``TupleN.toString()``: ``(a,1)``."""
    return "(" + ",".join(str(f) for f in fields) + ")"


def printed_row(*fields) -> str:
    """What PyFlink's ``print()`` writes for a Row-typed record: ``+I[a,1]``."""
    return "+I[" + ",".join(str(f) for f in fields) + "]"


def load(program: str):
    """Import a program as a module (its ``__main__`` block does not run) to read its data."""
    spec = importlib.util.spec_from_file_location(f"compat_{program[:-3]}", PROGRAMS / program)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def committed_part_files(base: Path) -> list[Path]:
    """The committed part files under ``base`` (in-progress files are hidden, dot-prefixed)."""
    return [p for p in sorted(base.rglob("*")) if p.is_file() and not p.name.startswith(".")]


def part_file_lines(base: Path, prefix: str, suffix: str) -> list[str]:
    """The lines of every committed part file; each file is named ``<prefix>-...<suffix>``
    as ``OutputFileConfig`` configures (Flink: ``<prefix>-<uid>-<partFileIndex><suffix>``)."""
    files = committed_part_files(base)
    assert files, f"no part files under {base}"
    lines: list[str] = []
    for path in files:
        assert path.name.startswith(prefix + "-") and path.name.endswith(suffix), path.name
        lines.extend(path.read_text().splitlines())
    return lines


def rolling(records, key, combine) -> list:
    """A keyed rolling reduce: after each record, the reduction of its key so far."""
    acc: dict = {}
    out = []
    for record in records:
        k = key(record)
        acc[k] = record if k not in acc else combine(acc[k], record)
        out.append(acc[k])
    return out


def tumbling(ts: int, size: int) -> tuple[int, int]:
    """Flink's TumblingEventTimeWindows.assignWindows (offset 0)."""
    start = ts - ts % size
    return start, start + size


def sliding(ts: int, size: int, slide: int, offset: int = 0) -> list[tuple[int, int]]:
    """Flink's SlidingEventTimeWindows.assignWindows: the last start is
    TimeWindow.getWindowStartWithOffset(ts, offset, slide), then every slide back while
    the window still holds ts."""
    last_start = ts - (ts - offset + slide) % slide
    return [(start, start + size) for start in range(last_start, ts - size, -slide)]


def sessions(intervals: list[tuple[int, int]]) -> list[tuple[int, int, int]]:
    """Merge [start, end) session windows that intersect (touching ones too, as Flink's
    TimeWindow.intersects): (start, end, element count) per merged session."""
    merged: list[list[int]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
            merged[-1][2] += 1
        else:
            merged.append([start, end, 1])
    return [tuple(m) for m in merged]  # type: ignore[misc]


def continuous_firings(first_ts: int, window_end: int, interval: int) -> int:
    """How often a ContinuousEventTimeTrigger fires a window when the watermark passes its
    end only after all input, under PyFlink's timer rule: the window's first element registers
    a timer at min(floor(ts, interval) + interval, max timestamp), and the window has a timer
    at its max timestamp. One watermark advance fires in rounds: a round fires the timers
    registered before it, in timestamp order; what they register or delete applies when the
    round ends. An interval firing registers the next one; the max-timestamp firing also
    cleans the window up, which deletes the pending interval timer. Timers of one key and
    window at one time are one timer."""
    max_ts = window_end - 1
    timers = {min(first_ts - first_ts % interval + interval, max_ts), max_ts}
    firings = 0
    while timers:
        registered, cleaned = set(), False
        for timer in sorted(timers):
            firings += 1
            if timer == max_ts:
                cleaned = True
            else:
                registered.add(min(timer + interval, max_ts))
        timers = set() if cleaned else registered
    return firings


# --------------------------------------------------------------- word counts
def test_batch_word_count_built_in_lines():
    """BATCH mode: one final count per word (a Types.TUPLE stream, so Java's text)."""
    lines = run("batch_word_frequencies.py")
    assert lines[:2] == ["No --input given: counting the built-in sample lines.",
                         "No --output given: printing the counts."]
    counts = collections.Counter(w for line in load("batch_word_frequencies.py").SAMPLE_LINES for w in line.split())
    assert sorted(lines[2:]) == sorted(java_tuple(w, n) for w, n in counts.items())


def test_batch_word_count_file_source_and_file_sink(tmp_path):
    """--input reads a text file (FileSource), --output writes part files (FileSink)."""
    text = ["to stream or to batch", "that is a question of bounds", "Stream on"]
    (tmp_path / "in.txt").write_text("\n".join(text) + "\n")
    out = tmp_path / "out"
    assert run("batch_word_frequencies.py", "--input", str(tmp_path / "in.txt"), "--output", str(out)) == []
    counts = collections.Counter(w for line in text for w in line.split())
    assert sorted(part_file_lines(out, "words", ".txt")) == sorted(java_tuple(w, n) for w, n in counts.items())


def test_text_file_tag_sum(tmp_path):
    """read_text_file + lambdas + sum(1) at parallelism 2: a rolling count per tag."""
    lines = ["Kafka; Flink ;state", ";flink;WINDOW; ;kafka", "state;state", "window"]
    (tmp_path / "tags.txt").write_text("\n".join(lines) + "\n")
    seen: collections.Counter = collections.Counter()
    expected = []
    for line in lines:
        for tag in (t.strip().lower() for t in line.split(";")):
            if tag:
                seen[tag] += 1
                expected.append(str((tag, seen[tag])))
    assert unordered(run("text_file_tag_sum.py", "tags.txt", cwd=tmp_path)) == sorted(expected)


def test_filtered_word_reduce():
    """Parallelism 1: rolling counts in input order, Java's text of TUPLE(STRING, INT)."""
    program = load("filtered_word_reduce.py")
    words = [w for line in program.NOTES for w in line.lower().replace(",", " ").replace(":", " ").split()
             if w not in program.STOP_WORDS]
    seen: collections.Counter = collections.Counter()
    expected = []
    for word in words:
        seen[word] += 1
        expected.append(java_tuple(word, seen[word]))
    assert run("filtered_word_reduce.py") == expected


# ------------------------------------------------------- rows, JSON, transformations
def test_named_row_basics():
    """ROW_NAMED fields by name; untyped results print str(), Row results +I[...]."""
    orders = load("named_row_basics.py").ORDERS
    out = sections(run("named_row_basics.py"), r"== (.+)")
    city_totals = rolling([(city, amount) for _, _, city, amount in orders], lambda p: p[0],
                          lambda a, b: (a[0], a[1] + b[1]))
    assert out == {
        "labels": [str((oid, customer.upper())) for oid, customer, _, _ in orders],
        "large orders": [customer for _, customer, _, amount in orders if amount >= 20],
        "city totals": [str(t) for t in city_totals],
        "cents rows": [printed_row(city, amount * 100) for _, _, city, amount in orders],
        "named rows": [printed_row(customer, amount + 1) for _, customer, _, amount in orders],
        "named fields": [f"{customer} owes {amount + 1}" for _, customer, _, amount in orders],
    }


def test_json_shipments():
    """Parsed and enriched JSON dicts, filtered on a nested field, printed with str()."""
    program = load("json_shipments.py")
    expected = []
    for shipment_id, text in program.SHIPMENTS:
        parcel = json.loads(text)
        parcel["grams"] += program.PACKAGING_GRAMS
        parcel["heavy"] = parcel["grams"] > 1000
        if parcel["route"]["from"] == "Oslo":
            expected.append(str((shipment_id, parcel)))
    assert unordered(run("json_shipments.py")) == sorted(expected)


def test_transformation_jobs():
    """One job per transformation; every env.execute() runs only the sinks added since."""
    out = {name: unordered(lines) for name, lines in sections(run("transformation_jobs.py"), r"--- (.+) ---").items()}
    products = rolling([("p", 2), ("q", 5), ("p", 3), ("p", 4), ("q", 2)], lambda p: p[0],
                       lambda a, b: (a[0], a[1] * b[1]))
    assert out == {
        "squares": sorted(str(n * n) for n in [3, 4, 5, 6]),  # Types.LONG(): Java's text
        "letters": sorted("abcde"),  # Types.STRING()
        "multiples of three": sorted(str(n) for n in range(1, 13) if n % 3 == 0),
        "keyed": sorted(str(v) for v in [("x", 10), ("y", 20), ("x", 30)]),  # a KeyedStream prints its values
        "products": sorted(java_tuple(*p) for p in products),  # TUPLE(STRING, INT)
    }


def test_process_function_jobs():
    """A ProcessFunction's return value is iterated (a Row gives its fields, a list its
    items), None emits nothing, a generator yields records (PyFlink's process_func)."""
    out = {name: unordered(lines) for name, lines in sections(run("process_function_jobs.py"), r"### (.+)").items()}
    running_max = rolling([("ann", 3), ("bo", 7), ("ann", 9), ("ann", 4), ("bo", 8)], lambda s: s[0],
                          lambda a, b: (a[0], max(a[1], b[1])))
    assert out == {
        "halve": sorted(str(v / 2) for v in [2, 5, 8]),
        "bracket": sorted(str(v + d) for v in [10, 20] for d in (-1, 1)),
        "syllables": sorted(str((part, i)) for word in ["stream-ing", "win-dow-ing"]
                            for i, part in enumerate(word.split("-"))),
        "keep even": sorted(str(v) for v in [1, 2, 3, 4, 6, 7] if v % 2 == 0),
        "running max": sorted(str(v) for v in running_max),
    }


def test_branching_and_side_outputs():
    """union, connect with co-functions, split by filters, and side outputs."""
    out = sections(run("branching_and_side_outputs.py"), r"\[\[ (.+) \]\]")
    side = out.pop("side outputs")
    assert {name: unordered(lines) for name, lines in out.items()} == {
        "union": sorted(str(v) for v in [5, 6, 7, 8, 9]),
        "co-process": sorted([str(v + 100) for v in [1, 2]] + [str(-v) for v in [30, 40]]),
        "co-map": sorted([str((name, round(price * 1.5, 2))) for name, price in [("apple", 2.0), ("pear", 3.0)]]
                         + [str(("KIWI", 9))]),
        "co-flat-map": sorted([p for s in ["a/b", "c/d/e"] for p in s.split("/")]
                              + ["*" * n for n in [2, 1] for _ in range(n)]),
        "split by filters": sorted([str(n * 10) for n in range(1, 13) if n <= 4]
                                   + [str(n) for n in range(1, 13) if n > 9]),
    }
    sizes = [12, 75, 40, 99, 3]
    assert side[0] == "accepted:"
    split = side.index("rejected:")
    assert unordered(side[1:split]) == sorted(str(v) for v in sizes if v <= 50)
    assert unordered(side[split + 1:]) == sorted(f"too big: {v}" for v in sizes if v > 50)


def test_rolling_aggregations():
    """sum/min/max keep the first element's other fields; min_by/max_by keep the first
    element on ties (PyFlink's KeyedStream._accumulate). Parallelism 1: input order."""
    trades = load("rolling_aggregations.py").TRADES
    symbol = lambda t: t[0]  # noqa: E731
    with_field = lambda t, i, v: t[:i] + (v,) + t[i + 1:]  # noqa: E731
    out = sections(run("rolling_aggregations.py"), r"\* (.+)")
    assert out == {
        "sum": [str(t) for t in rolling(trades, symbol, lambda a, b: with_field(a, 3, a[3] + b[3]))],
        "min_by": [str(t) for t in rolling(trades, symbol, lambda a, b: b if b[2] < a[2] else a)],
        "min": [printed_row(*t) for t in rolling(trades, symbol, lambda a, b: with_field(a, 2, min(a[2], b[2])))],
        "max_by": [printed_row(*t) for t in rolling(trades, symbol, lambda a, b: b if b[2] > a[2] else a)],
        "max": [java_tuple(*t) for t in rolling(trades, symbol, lambda a, b: with_field(a, 2, max(a[2], b[2])))],
    }


# ------------------------------------------------------------------ keyed state
def test_running_balance_state():
    """ValueState in a KeyedProcessFunction: a running balance per account."""
    balances: dict[str, float] = {}
    expected = []
    for account, amount in load("running_balance_state.py").MOVEMENTS:
        balances[account] = balances.get(account, 0.0) + amount
        expected.append(str((account, balances[account])))
    assert unordered(run("running_balance_state.py")) == sorted(expected)


def test_group_average_state():
    """A keyed FlatMapFunction with ValueState: the average of each full group of three."""
    program = load("group_average_state.py")
    by_key: dict[str, list[int]] = collections.defaultdict(list)
    for key, value in program.READINGS:
        by_key[key].append(value)
    size = program.GROUP_SIZE
    expected = [str((key, sum(values[i:i + size]) // size))
                for key, values in by_key.items() for i in range(0, len(values) - size + 1, size)]
    assert unordered(run("group_average_state.py")) == sorted(expected)


def test_list_map_state_ttl():
    """ListState keeps the last three amounts, MapState counts categories; nothing expires."""
    program = load("list_map_state_ttl.py")
    recent: dict[str, list[int]] = collections.defaultdict(list)
    per_category: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    expected = []
    for user, category, amount in program.PURCHASES:
        recent[user] = (recent[user] + [amount])[-program.KEEP_LAST:]
        per_category[user][category] += 1
        expected.append(str((user, list(recent[user]), sorted(per_category[user].items()))))
    assert unordered(run("list_map_state_ttl.py")) == sorted(expected)


def test_sequence_ordinals_file_sink(tmp_path):
    """NumberSequenceSource -> Row -> keyed MapFunction with state -> FileSink: each bucket's
    elements are numbered 1..count (the order within a bucket depends on the source splits,
    the set of (bucket, ordinal) pairs does not)."""
    program = load("sequence_ordinals_file_sink.py")
    out = tmp_path / "out"
    assert run("sequence_ordinals_file_sink.py", str(out)) == []
    sizes = collections.Counter(n % program.BUCKETS for n in range(1, program.LAST_NUMBER + 1))
    expected = [java_tuple(bucket, i) for bucket, size in sizes.items() for i in range(1, size + 1)]
    assert sorted(part_file_lines(out, "ordinals", ".out")) == sorted(expected)


# ------------------------------------------------------------------ timers
def test_delayed_event_timers():
    """One timer per distinct (timestamp + delay) of a key; the watermark lags more than the
    timestamps spread, so all fire at the end of the input, with the key's final total."""
    program = load("delayed_event_timers.py")
    totals: collections.Counter = collections.Counter()
    timers: dict[str, set[int]] = collections.defaultdict(set)
    for sensor, ts, reading in program.READINGS:
        totals[sensor] += reading
        timers[sensor].add(ts + program.REPORT_DELAY_MS)
    expected = [str((sensor, t, totals[sensor])) for sensor in timers for t in timers[sensor]]
    assert unordered(run("delayed_event_timers.py")) == sorted(expected)


def test_idle_key_timeout():
    """Count with timeout: every event is within the timeout of the first, so timers are due
    only at the end of the input, where only each key's latest timer reports its total."""
    totals: collections.Counter = collections.Counter()
    for _, user, clicks in load("idle_key_timeout.py").CLICKS:
        totals[user] += clicks
    assert unordered(run("idle_key_timeout.py")) == sorted(str(item) for item in totals.items())


# ------------------------------------------------------------------ windows
def expected_tumbling() -> list[str]:
    program = load("tumbling_window_counts.py")
    windows: dict[tuple, list[int]] = collections.defaultdict(list)
    for channel, ts, visits in program.VISITS:
        windows[(channel, *tumbling(ts, program.WINDOW_MS))].append(visits)
    return sorted(java_tuple(*key, len(v), sum(v)) for key, v in windows.items())


def expected_sliding() -> list[str]:
    program = load("sliding_window_counts.py")
    counts = collections.Counter((region, *w) for region, ts in program.PINGS
                                 for w in sliding(ts, program.SIZE_MS, program.SLIDE_MS))
    return sorted(java_tuple(*key, n) for key, n in counts.items())


def expected_sessions(program: str, data: str, gap) -> list[str]:
    by_key: dict[str, list[tuple[int, int]]] = collections.defaultdict(list)
    for element in getattr(load(program), data):
        by_key[element[0]].append((element[1], element[1] + gap(element)))
    return sorted(java_tuple(key, *session) for key, intervals in by_key.items() for session in sessions(intervals))


def expected_fixed_sessions() -> list[str]:
    return expected_sessions("session_fixed_gap.py", "ACTIVITY", lambda e: load("session_fixed_gap.py").GAP_MS)


def expected_dynamic_sessions() -> list[str]:
    return expected_sessions("session_dynamic_gap.py", "EVENTS", lambda e: e[2])


def expected_count_windows() -> list[str]:
    program = load("count_window_totals.py")
    by_key: dict[str, list[int]] = collections.defaultdict(list)
    for product, quantity in program.SALES:
        by_key[product].append(quantity)
    size = program.BATCH
    return sorted(java_tuple(key, sum(q[i:i + size]), max(q[i:i + size]))
                  for key, q in by_key.items() for i in range(0, len(q) - size + 1, size))


def expected_continuous() -> list[str]:
    program = load("continuous_trigger_window.py")
    windows: dict[tuple, list[int]] = collections.defaultdict(list)
    for meter, ts in program.SAMPLES:
        windows[(meter, *tumbling(ts, program.WINDOW_MS))].append(ts)
    expected = []
    for (meter, start, end), stamps in windows.items():
        fired = continuous_firings(stamps[0], end, program.FIRE_EVERY_MS)
        expected += [java_tuple(meter, start, end, len(stamps))] * fired
    return sorted(expected)


WINDOW_PROGRAMS = {
    # program: (expected lines, part prefix, part suffix)
    "tumbling_window_counts.py": (expected_tumbling, "tumbling", ""),
    "sliding_window_counts.py": (expected_sliding, "part", ".csv"),
    "session_fixed_gap.py": (expected_fixed_sessions, "session", ".log"),
    "session_dynamic_gap.py": (expected_dynamic_sessions, "dyn", ""),
    "count_window_totals.py": (expected_count_windows, "batch", ".txt"),
    "continuous_trigger_window.py": (expected_continuous, "fired", ""),
}


@pytest.mark.parametrize("program", sorted(WINDOW_PROGRAMS))
def test_window_program_prints(program):
    """Each window result once per firing, as Java's text of the declared TUPLE type."""
    expected, _, _ = WINDOW_PROGRAMS[program]
    assert sorted(run(program)) == expected()


@pytest.mark.parametrize("program", sorted(WINDOW_PROGRAMS))
def test_window_program_writes_part_files(program, tmp_path):
    """With --output the same results go to part files (SimpleStringEncoder: Java's text)."""
    expected, prefix, suffix = WINDOW_PROGRAMS[program]
    assert run(program, "--output", str(tmp_path / "out")) == []
    assert sorted(part_file_lines(tmp_path / "out", prefix, suffix)) == expected()


def test_sliding_window_offset():
    """SlidingEventTimeWindows.of(8 ms, 4 ms, offset 1 ms): (key, window start, count)."""
    counts = collections.Counter((door, start) for door, ts in load("sliding_window_offset.py").TAPS
                                 for start, _ in sliding(ts, 8, 4, offset=1))
    assert sorted(run("sliding_window_offset.py")) == sorted(java_tuple(*key, n) for key, n in counts.items())


# ------------------------------------------------------------------ the suite itself
TESTED = {
    "batch_word_frequencies.py", "text_file_tag_sum.py", "filtered_word_reduce.py", "named_row_basics.py",
    "json_shipments.py", "transformation_jobs.py", "process_function_jobs.py", "branching_and_side_outputs.py",
    "rolling_aggregations.py", "running_balance_state.py", "group_average_state.py", "list_map_state_ttl.py",
    "sequence_ordinals_file_sink.py", "delayed_event_timers.py", "idle_key_timeout.py", "sliding_window_offset.py",
    *WINDOW_PROGRAMS,
}


def conformance_tested() -> set[str]:
    """The programs run by the conformance test files (``test_conformance_*.py``) beside this one."""
    named = set()
    for test_file in Path(__file__).parent.glob("test_conformance_*.py"):
        named |= set(re.findall(r"[\"']([a-z0-9_]+\.py)[\"']", test_file.read_text()))
    return named


def test_every_program_is_covered():
    """Each program has a test here or in a conformance test file, opens with a one-line
    docstring naming what it exercises, and imports streamkernel where a PyFlink program
    imports pyflink."""
    programs = {p.name for p in PROGRAMS.glob("*.py")}
    assert programs == TESTED | (conformance_tested() & programs)
    assert programs - TESTED, "the conformance test files name no program"
    assert len(programs) >= 20
    for name in programs:
        text = (PROGRAMS / name).read_text()
        first = text.splitlines()[0]
        assert first.startswith('"""') and first.endswith('"""') and len(first) > 6, name
        assert "# Source:" not in text and "Licensed to the Apache" not in text, name
        assert re.search(r"^from streamkernel\.", text, re.MULTILINE), name
        assert not re.search(r"^\s*(from|import)\s+pyflink\b", text, re.MULTILINE), name


def test_expected_output_helpers():
    """The helpers computing expected outputs, on cases worked out by hand."""
    assert tumbling(9, 5) == (5, 10)
    assert sliding(1, 5, 2) == [(0, 5), (-2, 3)]
    assert sliding(0, 8, 4, offset=1) == [(-3, 5), (-7, 1)]
    assert sessions([(1, 6), (2, 7), (9, 14), (15, 20), (20, 21)]) == [(1, 7, 2), (9, 14, 1), (15, 21, 2)]
    # a window [0, 10) first fed at 3, fired every 5: timers at 5 and 9
    assert continuous_firings(3, 10, 5) == 2  # 5 and 9 in one round
    assert continuous_firings(0, 20, 6) == 2  # 6 and 19; 12 (registered by 6) deleted by 19's cleanup
    assert continuous_firings(15, 20, 6) == 2  # 18 and 19
    assert continuous_firings(19, 20, 6) == 1  # floor 18 + 6 > 19: one timer at 19
    assert rolling([("a", 1), ("b", 2), ("a", 3)], lambda r: r[0], lambda x, y: (x[0], x[1] + y[1])) == \
        [("a", 1), ("b", 2), ("a", 4)]
    assert java_tuple("a", 1) == "(a,1)" and printed_row("a", 1) == "+I[a,1]"
    assert SUBTASK_PREFIX.sub("", "12> (a,1)") == "(a,1)"
