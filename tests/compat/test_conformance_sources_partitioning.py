"""Conformance with PyFlink 2.3: number sequences, collections and files as sources, physical
partitioning, key_by's assignment of keys to subtasks, and async I/O with asyncio.

Each program in ``programs/`` was also run under real PyFlink 2.3.0 (scripts/compare_with_pyflink.py),
whose output equals the expectations computed here from the programs' data.

How PyFlink assigns a key to a subtask (``key_by`` without ``key_type``): the Python key is
pickled (cloudpickle, protocol 5) and the Java side keys by ``Row.of(pickled bytes)``; Flink
hashes that Row as ``RowUtils.deepHashCodeRow``: ``31 * RowKind.INSERT (0) + (31 * 1 + (31 * 1 +
Arrays.hashCode(bytes)))``, spreads it with ``MathUtils.murmurHash``, takes it modulo the max
parallelism (128) for the key group, and the key group ``g`` belongs to subtask
``g * parallelism // 128`` (``KeyGroupRangeAssignment``). Written out below with Java's int
arithmetic, independently of streamkernel's implementation.
"""

from __future__ import annotations

import pickle

from tests.compat.test_pyflink_programs import load, run, unordered


def _int32(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x >= 1 << 31 else x


def _murmur(code: int) -> int:
    """Flink's MathUtils.murmurHash(int), Java int semantics."""
    def rotl(v: int, n: int) -> int:
        u = v & 0xFFFFFFFF
        return _int32((u << n) | (u >> (32 - n)))

    def ushr(v: int, n: int) -> int:
        return (v & 0xFFFFFFFF) >> n

    code = rotl(_int32(code * _int32(0xCC9E2D51)), 15)
    code = rotl(_int32(code * _int32(0x1B873593)), 13)
    code = _int32(code * 5 + _int32(0xE6546B64)) ^ 4
    code = _int32(code ^ ushr(code, 16))
    code = _int32(code * _int32(0x85EBCA6B))
    code = _int32(code ^ ushr(code, 13))
    code = _int32(code * _int32(0xC2B2AE35))
    code = _int32(code ^ ushr(code, 16))
    return code if code >= 0 else (-code if code != -(1 << 31) else 0)


def pyflink_subtask(key, parallelism: int, max_parallelism: int = 128) -> int:
    """The subtask PyFlink's key_by (no key_type) sends ``key`` to."""
    array_hash = 1
    for b in pickle.dumps(key, protocol=5):
        array_hash = _int32(31 * array_hash + (b - 256 if b > 127 else b))
    row_hash = _int32(31 * 0 + _int32(31 * 1 + _int32(31 * 1 + array_hash)))
    return (_murmur(row_hash) % max_parallelism) * parallelism // max_parallelism


def test_key_by_sends_each_key_to_the_subtask_pyflink_sends_it_to():
    program = load("partition_key_subtasks.py")
    expected = []
    for parallelism in (2, 4):
        for label, keys in (("str", program.WORDS), ("int", program.NUMBERS), ("float", program.FLOATS),
                            ("tuple", program.PAIRS)):
            expected += [f"p{parallelism} {label} {key!r} -> subtask {pyflink_subtask(key, parallelism)}"
                         for key in keys]
    # the subtasks differ: a program whose keys all landed on one subtask would prove nothing
    assert len({line.rsplit(" ", 1)[1] for line in expected if line.startswith("p4")}) == 4
    assert unordered(run("partition_key_subtasks.py")) == sorted(expected)


def test_physical_partitioning_from_one_source_subtask_into_three():
    numbers, n = list(range(10)), 3
    expected = [f"custom {x} -> subtask {(x * 7) % n}" for x in numbers]  # partitioner(key, n), key = x * 7
    expected += [f"broadcast {x} -> subtask {i}" for x in numbers for i in range(n)]
    expected += [f"rescale {x} -> subtask {x % n}" for x in numbers]  # round robin from channel 0
    # rebalance starts at a random channel in Flink: only how many records each subtask got is defined
    per_subtask = [len(numbers[i::n]) for i in range(n)]
    expected += [f"rebalance record #{k} of a subtask" for count in per_subtask for k in range(1, count + 1)]
    expected += [str(x * 10) for x in numbers]  # shuffle: each record once, somewhere
    expected += [f"forward {x} -> subtask 0" for x in numbers]
    assert unordered(run("partition_strategies.py")) == sorted(expected)


def test_number_sequence_sources_and_execute_and_collect():
    def running_sums(values, key_of):
        sums, out = {}, []
        for v in values:
            k = key_of(v)
            sums[k] = sums.get(k, 0) + v
            out.append((k, sums[k]))
        return out

    totals = {}
    for k, total in running_sums(range(1, 31), lambda v: v % 3):
        totals[k] = max(totals.get(k, 0), total)
    expected = [
        "plain: [1, 2, 3, 4, 5] " + str(["int"] * 5),  # NumberSequenceSource's inclusive end; Python ints
        f"limit: {list(range(10, 13))}",
        "limit beyond end: [1, 2]",
        f"squares: {[n * n for n in range(1, 7) if n * n % 2 == 0]}",
        "strings: ['#1', '#2', '#3'] " + str(["str"] * 3),
        f"pickled tuples: {[(n, n / 2) for n in range(1, 4)]} " + str(["tuple"] * 3),
        "rows: [Row(f0='1', f1=1), Row(f0='2', f1=2)] ['Row', 'Row']",
        "tuples: [('1', 1), ('2', 2)] ['tuple', 'tuple']",
        f"with: {[n % 3 for n in range(10)]}",
        f"running sums: {running_sums(range(1, 9), lambda v: v % 2)}",
        "end below start: rejected",
        f"parallel multiples of 7: {[n for n in range(1, 101) if n % 7 == 0]}",
        f"parallel totals: {sorted(totals.items())}",
        "parallel limit count: 7",
    ]
    assert run("sources_number_sequence.py") == expected


def test_from_collection_with_every_kind_of_type_info_and_a_file_source_over_a_directory():
    lines = run("sources_collections.py")
    cases = [  # name, collected (repr, Python type names), printed lines (Java's or Python's text)
        ("untyped", "[1, 'two', (3, 4.5), None, [5]]", ["int", "str", "tuple", "NoneType", "list"],
         ["1", "two", "(3, 4.5)", "None", "[5]"]),
        ("INT", "[1, -2, 3]", ["int"] * 3, ["1", "-2", "3"]),
        ("LONG", f"[{2 ** 40}, 0]", ["int"] * 2, [str(2 ** 40), "0"]),
        ("STRING", "['a', '', 'ü']", ["str"] * 3, ["a", "", "ü"]),
        ("DOUBLE", "[1.5, -0.25, 3.0]", ["float"] * 3, ["1.5", "-0.25", "3.0"]),
        ("FLOAT", "[1.5, -0.25]", ["float"] * 2, ["1.5", "-0.25"]),
        ("BOOLEAN", "[True, False]", ["bool"] * 2, ["true", "false"]),  # Java's Boolean.toString
        ("SHORT", "[7, -7]", ["int"] * 2, ["7", "-7"]),
        ("BYTE", "[1, -1]", ["int"] * 2, ["1", "-1"]),
        ("ROW", "[Row(f0=1, f1='x'), Row(f0=2, f1='y')]", ["Row"] * 2, ["+I[1,x]", "+I[2,y]"]),
        ("ROW_NAMED", "[Row(id=1, name='x')]", ["Row"], ["+I[1,x]"]),
        ("TUPLE", "[(1, 'x'), (2, 'y')]", ["tuple"] * 2, ["(1,x)", "(2,y)"]),  # Java's Tuple2.toString
        ("BASIC_ARRAY", "[[1, 2], [3]]", ["list"] * 2, None),  # not printed: Java prints arrays by identity
        ("PRIMITIVE_ARRAY", "[[1, 2]]", ["list"], None),
        ("MAP", "[{'a': 1}]", ["dict"], ["{a=1}"]),  # java.util.Map.toString
    ]
    expected = []
    for name, collected, types, printed in cases:
        expected.append(f"{name} collected: {collected} {types}")
        if printed is not None:
            expected += [f"--- {name} printed ---", *printed]
    files = {"a.txt": ["a1", "a2"], "b.txt": ["b1"], "c.txt": ["c1", "c2", "c3"]}
    upper = sorted(line.upper() for file_lines in files.values() for line in file_lines)
    expected += [f"files: {upper} ['str']", "files: one after another: True lines in order: True"]
    assert lines == expected


def test_async_io_orders_times_out_and_fails_as_pyflink_does():
    program = load("asyncio_ordering.py")
    delays = program.DELAYS
    assert delays == sorted(delays, reverse=True)  # later records finish first: ordering is exercised

    def lookup(value):
        return [] if value == 7 else [f"{value}a", f"{value}b"] if value == 8 else [f"looked up {value}"]

    in_order = [out for value in range(10) for out in lookup(value)]
    assert run("asyncio_ordering.py") == [
        f"ordered: {in_order}",
        f"unordered, capacity 1: {in_order}",  # one record in flight: completion order is input order
        f"unordered, sorted: {sorted(in_order)}",
        "timeouts: ['fast 1', 'timed out 2', 'fast 3']",
        "exception: job failed; True",
    ]


# --------------------------------------------------------------------------- key_by with key_type
# With key_type, PyFlink keys the Java side by Row.of(key as Java object of that type): the Row's
# hash is 31 * 0 + (31 * 1 + (31 * 1 + key.hashCode())), i.e. 62 + Java's hashCode of the key.
def _java_hash(kind: str, value) -> int:
    """Java's hashCode of ``value`` as PyFlink's Java object of basic type ``kind``."""
    import struct

    if kind == "STRING":  # String.hashCode over UTF-16 code units
        h = 0
        data = value.encode("utf-16-be", "surrogatepass")
        for i in range(0, len(data), 2):
            h = _int32(31 * h + int.from_bytes(data[i:i + 2], "big"))
        return h
    if kind in ("INT", "SHORT"):
        return _int32(value)
    if kind == "LONG":  # (int) (v ^ (v >>> 32))
        v = value & 0xFFFFFFFFFFFFFFFF
        return _int32(v ^ (v >> 32))
    if kind == "BOOLEAN":
        return 1231 if value else 1237
    if kind == "DOUBLE":
        bits = struct.unpack(">Q", struct.pack(">d", value))[0]
        return _int32(bits ^ (bits >> 32))
    if kind == "FLOAT":
        return _int32(struct.unpack(">I", struct.pack(">f", value))[0])
    raise AssertionError(kind)


FIELD_KINDS = {"TUPLE": ("STRING", "INT"), "ROW": ("STRING", "LONG")}


def pyflink_typed_subtask(name: str, key, parallelism: int) -> int:
    """The subtask PyFlink's key_by(..., key_type) sends ``key`` to (``name`` of the key type)."""
    if name == "TUPLE":  # Tuple2.hashCode: 31 * f0.hashCode() + f1.hashCode()
        h = 0
        for kind, field in zip(FIELD_KINDS[name], key):
            h = _int32(31 * h + _java_hash(kind, field))
    elif name == "ROW":  # RowUtils.deepHashCodeRow: fields folded from 1 as 31 * h + (31 + hashCode)
        h = 1
        for kind, field in zip(FIELD_KINDS[name], key):
            h = _int32(31 * h + 31 + _java_hash(kind, field))
    else:
        h = _java_hash(name, key)
    return (_murmur(_int32(62 + h)) % 128) * parallelism // 128


def test_key_by_with_key_type_hashes_keys_as_java_does_and_state_follows():
    program = load("partition_key_types.py")
    lines = run("partition_key_types.py")
    expected = [f"{name} {key!r} -> subtask {pyflink_typed_subtask(name, key, 4)}"
                for name, _, keys in program.CASES for key in keys]
    assert sorted(line for line in lines if "-> subtask" in line) == sorted(expected)

    def prefixed(fruit: str, text: str) -> str:  # the print after a keyed operator at parallelism 2
        return f"{pyflink_typed_subtask('STRING', fruit, 2) + 1}> {text}"

    units, running = {}, []
    for fruit, count in program.SALES:
        units[fruit] = units.get(fruit, 0) + count
        running.append((fruit, units[fruit]))
    assert sorted(line for line in lines if "> units " in line) == sorted(
        prefixed(fruit, f"units {fruit} {total}") for fruit, total in running)
    ledger = [prefixed(fruit, f"{fruit} units so far {total}") for fruit, total in running]
    ledger += [prefixed(fruit, f"{fruit} price {price}, price #1") for fruit, price in program.PRICES]
    assert sorted(line for line in lines if "so far" in line or "price #" in line) == sorted(ledger)
    # the keys do spread over the subtasks, so the prefixes say something
    assert {pyflink_typed_subtask("STRING", fruit, 2) for fruit, _ in program.PRICES} == {0, 1}
    assert lines[-1] == "differently typed keys connected: rejected"
    assert len(lines) == len(expected) + 2 * len(running) + len(program.PRICES) + 1


def test_connecting_keyed_streams_of_different_key_types_is_rejected_naming_both():
    import pytest

    from streamkernel.common import Types
    from streamkernel.datastream import KeyedCoProcessFunction, StreamExecutionEnvironment
    from streamkernel.errors import InvalidProgramError

    class Both(KeyedCoProcessFunction):
        def process_element1(self, value, ctx):
            yield value

        def process_element2(self, value, ctx):
            yield value

    env = StreamExecutionEnvironment.get_execution_environment()
    typed = env.from_collection([("a", 1)]).key_by(lambda x: x[0], key_type=Types.STRING())
    pickled = env.from_collection([("a", 1)]).key_by(lambda x: x[0])
    with pytest.raises(InvalidProgramError, match="key types of the input KeyedStreams don't match: "
                                                  "String and PickledByteArrayTypeInfo"):
        typed.connect(pickled).process(Both())
    typed.connect(env.from_collection([("a", 1)]).key_by(lambda x: x[0], Types.STRING())).process(Both())


def test_from_collection_with_dates_times_and_decimals():
    program = load("sources_collection_time_types.py")
    expected = []
    for name, values, _ in program.CASES:
        expected.append(f"{name} collected: {values!r} {[type(v).__name__ for v in values]}")
        expected.append(f"--- {name} printed ---")
        # java.sql.Date / java.sql.Time / BigDecimal.toString (plain notation for these scales)
        expected += [v.isoformat() if name != "BIG_DEC" else str(v) for v in values]
    assert run("sources_collection_time_types.py") == expected
