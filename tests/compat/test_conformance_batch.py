"""BATCH execution (``execution.runtime-mode: BATCH``) conformance with PyFlink 2.3.

The expected outputs are computed here from the programs' data following Flink's documented
batch semantics (docs: "Execution Mode (Batch/Streaming)") and PyFlink's key serialization:

- a keyed operator reads its whole input sorted by key, then by timestamp (ties keep their
  arrival order); each key is processed to its end before the next one;
- the order of keys is the order of their serialized bytes compared as Flink's
  VariableLengthByteKeyComparator does: byte by byte as signed Java bytes, a key that is a
  prefix of another first. PyFlink's Java key is a one-field Row: one mask byte (0x20 when the
  key is None, and nothing else), then the field: without ``key_type`` the pickled key
  (``pickle.dumps``) as an int32 length + bytes; with Types.INT() 4 big-endian bytes; with
  Types.STRING() Flink's StringValue encoding (length + 1, then each UTF-16 unit in 7-bit
  groups, low group first, high bit = more). Keys are equal when their bytes are (0 and False
  are two keys);
- reduce / sum emit one final value per key; count windows fire as in streaming, per key;
- there is no watermark during the run (``current_watermark()`` is the minimum); at the end
  of each key its event-time timers fire with the watermark at the maximum (its windows
  fire there), then its processing-time timers.

All programs were run with real PyFlink 2.3 (``/work/pyflink-run``): its lines equal these
expectations, section by section (the sections are separate pipelines, printed concurrently).
"""

from __future__ import annotations

import functools
import importlib.util
import pathlib
import pickle
import struct
import subprocess
import sys

_spec = importlib.util.spec_from_file_location(
    "pyflink_programs_helpers", pathlib.Path(__file__).with_name("test_pyflink_programs.py"))
_helpers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_helpers)
REPO, load, run, unordered = _helpers.REPO, _helpers.load, _helpers.run, _helpers.unordered

MIN_LONG, MAX_LONG = -2**63, 2**63 - 1


# --------------------------------------------------------------------------- Flink's key order
def _string_value_bytes(text: str) -> list[int]:
    def seven_bit_groups(n: int) -> list[int]:
        groups = []
        while True:
            low, n = n & 0x7F, n >> 7
            if n == 0:
                return groups + [low]
            groups.append(low | 0x80)

    data = text.encode("utf-16-be")
    units = [int.from_bytes(data[i:i + 2], "big") for i in range(0, len(data), 2)]
    out = seven_bit_groups(len(units) + 1)
    for unit in units:
        out += seven_bit_groups(unit)
    return out


def key_bytes(key, key_type: str = "pickled") -> list[int]:
    """The key as Flink serializes PyFlink's key Row, as signed Java bytes."""
    if key is None:
        raw = [0x20]
    elif key_type == "int":
        raw = [0] + list(struct.pack(">i", key))
    elif key_type == "string":
        raw = [0] + _string_value_bytes(key)
    else:
        data = pickle.dumps(key)
        raw = [0] + list(len(data).to_bytes(4, "big")) + list(data)
    return [b - 256 if b > 127 else b for b in raw]


def compare_keys(a: list[int], b: list[int]) -> int:
    """VariableLengthByteKeyComparator: signed bytes, then the shorter first."""
    for x, y in zip(a, b):
        if x != y:
            return -1 if x < y else 1
    return (len(a) > len(b)) - (len(a) < len(b))


def grouped(records, key_of, key_type="pickled", timestamp_of=lambda r: 0):
    """[(key, [records in timestamp order])] in Flink's key order."""
    groups: dict = {}
    for r in records:
        groups.setdefault(tuple(key_bytes(key_of(r), key_type)), (key_of(r), []))[1].append(r)
    ordered = sorted(groups.items(), key=functools.cmp_to_key(lambda a, b: compare_keys(list(a[0]), list(b[0]))))
    return [(key, sorted(rs, key=timestamp_of)) for _, (key, rs) in ordered]


def section(lines: list[str], name: str) -> list[str]:
    return [line for line in lines if line.startswith(name + " ")]


def reduce_all(records, function):
    return functools.reduce(function, records)


# --------------------------------------------------------------------------- tests
def test_key_order_rule_examples():
    """The rule reproduces orders observed with PyFlink 2.3 (1, 'a', 'b', 'c', 'aa', 'bb'; signed ints)."""
    def order(keys, key_type="pickled"):
        return [k for k, _ in grouped([(k,) for k in keys], lambda r: r[0], key_type)]

    assert order(['bb', 1, 'a', 'c', 'aa', 'b']) == [1, 'a', 'b', 'c', 'aa', 'bb']
    assert order([5, -3, 0, 300, -1, 200], "int") == [-3, -1, 200, 0, 5, 300]  # 200 = 0x000000C8: C8 < 0 signed
    assert order(['b', 'é', '中', 'ab', ''], "string") == ['', '中', 'é', 'b', 'ab']


def test_batch_key_order_reduce_sum_count_window_and_key_types():
    program = load("batch_key_order.py")
    lines = run("batch_key_order.py")
    records = program.RECORDS

    def key(r):
        return r[0]

    assert section(lines, "reduce") == [
        f"reduce {reduce_all(rs, lambda a, b: (a[0], a[1] + b[1], max(a[2], b[2])))}" for _, rs in grouped(records, key)]
    assert section(lines, "sum") == [
        f"sum {(rs[0][0], sum(r[1] for r in rs), rs[0][2])}" for _, rs in grouped(records, key)]
    windows = []
    for _, rs in grouped(records, key):
        for i in range(0, len(rs) - 1, 2):
            windows.append(f"count_window {reduce_all(rs[i:i + 2], lambda a, b: (a[0], a[1] + b[1], b[2]))}")
    assert section(lines, "count_window") == windows

    def counts(name, keys, key_type):
        return [f"{name} {(k, len(rs))}" for k, rs in grouped([(k, 1) for k in keys], key, key_type)]

    assert section(lines, "int_key") == counts("int_key", program.INT_KEYS, "int")
    assert section(lines, "pickled_int") == counts("pickled_int", program.INT_KEYS, "pickled")
    assert section(lines, "string_key") == counts("string_key", program.STR_KEYS, "string")
    assert section(lines, "pickled_str") == counts("pickled_str", program.STR_KEYS, "pickled")
    assert section(lines, "mixed") == counts("mixed", program.MIXED_KEYS, "pickled")
    assert "mixed (False, 1)" in lines and "mixed (0, 1)" in lines  # distinct pickles: distinct keys


def test_batch_event_time_timers_windows_and_watermarks():
    program = load("batch_event_time.py")
    lines = run("batch_event_time.py")
    records = program.RECORDS
    groups = grouped(records, lambda r: r[0], timestamp_of=lambda r: r[2])

    elements, timers = [], []
    for key, rs in groups:
        total = 0
        for r in rs:
            total += r[1]
            elements.append(f"element key={key} value={r} timestamp={r[2]} watermark={MIN_LONG} total={total}")
        timers.append(f"timer key={key} at={program.EVENT_TIMER} TimeDomain.EVENT_TIME watermark={MAX_LONG} total={total}")
        timers.append(f"timer key={key} at={program.PROCESSING_TIMER} TimeDomain.PROCESSING_TIME "
                      f"watermark={MAX_LONG} total={total}")
    assert section(lines, "element") == elements
    assert section(lines, "timer") == timers

    def tumbling(rs):
        panes: dict = {}
        for r in rs:
            panes.setdefault(r[2] - r[2] % 4, []).append(r)
        return sorted(panes.items())

    windows, window_reduce = [], []
    for key, rs in groups:
        for start, pane in tumbling(rs):
            windows.append(f"window key={key} [{start},{start + 4}) amounts={[r[1] for r in pane]}")
            window_reduce.append(f"window_reduce {reduce_all(pane, lambda a, b: (a[0], a[1] + b[1], b[2]))}")
    assert section(lines, "window") == windows
    assert section(lines, "window_reduce") == window_reduce
    # window_all: one key (Flink's NullByteKeySelector), its records in timestamp order
    all_in_time_order = sorted(records, key=lambda r: r[2])
    assert section(lines, "window_all") == [
        f"window_all {reduce_all(pane, lambda a, b: (a[0], a[1] + b[1], b[2]))}" for _, pane in tumbling(all_in_time_order)]
    assert section(lines, "non_keyed") == [
        f"non_keyed {r} timestamp={r[2]} watermark={MIN_LONG}" for r in records]


def test_batch_parallel_reduce_and_window():
    program = load("batch_parallel_reduce.py")
    lines = run("batch_parallel_reduce.py")
    records = program.RECORDS
    expected = []
    for _, rs in grouped(records, lambda r: r[0], timestamp_of=lambda r: r[2]):
        expected.append(f"reduce {reduce_all(rs, lambda a, b: (a[0], a[1] + b[1], max(a[2], b[2])))}")
        panes: dict = {}
        for r in rs:
            panes.setdefault(r[2] // 50, []).append(r)
        expected += [f"window {reduce_all(p, lambda a, b: (a[0], a[1] + b[1], max(a[2], b[2])))}" for p in panes.values()]
    assert all(line[:3] in ("1> ", "2> ") for line in lines)
    assert unordered(lines) == sorted(expected)


UNBOUNDED_BATCH = """
from streamkernel.common import WatermarkStrategy
from streamkernel.datastream import RuntimeExecutionMode, StreamExecutionEnvironment
from streamkernel.datastream.connectors.datagen import DataGeneratorSource

env = StreamExecutionEnvironment.get_execution_environment()
env.set_runtime_mode(RuntimeExecutionMode.BATCH)
env.from_source(DataGeneratorSource(lambda i: i), WatermarkStrategy.no_watermarks(), "numbers").print()
env.execute("unbounded in batch")
"""


def test_unbounded_source_in_batch_mode_is_rejected_before_the_job_starts():
    proc = subprocess.run([sys.executable, "-c", UNBOUNDED_BATCH], cwd=REPO, capture_output=True, text=True,
                          timeout=120, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert proc.returncode != 0
    assert ("Detected an UNBOUNDED source with the 'execution.runtime-mode' set to 'BATCH'. This combination is not "
            "allowed, please set the 'execution.runtime-mode' to STREAMING or AUTOMATIC") in proc.stderr
    assert "'numbers'" in proc.stderr
    assert proc.stdout == ""
