"""Key groups: deterministic key hashing, key group -> subtask ranges (Flink's formulas)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter

import pytest

from streamkernel.graph.keygroups import (
    DEFAULT_LOWER_BOUND_MAX_PARALLELISM,
    UPPER_BOUND_MAX_PARALLELISM,
    assign_key_to_operator,
    assign_to_key_group,
    default_max_parallelism,
    key_group_range_for_operator,
    operator_index_for_key_group,
    stable_hash,
)


def _int32(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x >= 1 << 31 else x


def _java_murmur(code: int) -> int:
    """Flink's MathUtils.murmurHash written with Java int semantics, as a cross-check."""
    def rotl(v: int, n: int) -> int:
        u = v & 0xFFFFFFFF
        return _int32((u << n) | (u >> (32 - n)))

    def ushr(v: int, n: int) -> int:
        return (v & 0xFFFFFFFF) >> n

    code = _int32(_int32(code) * _int32(0xCC9E2D51))
    code = rotl(code, 15)
    code = _int32(code * _int32(0x1B873593))
    code = rotl(code, 13)
    code = _int32(code * 5 + _int32(0xE6546B64))
    code ^= 4
    code = _int32(code ^ ushr(code, 16))
    code = _int32(code * _int32(0x85EBCA6B))
    code = _int32(code ^ ushr(code, 13))
    code = _int32(code * _int32(0xC2B2AE35))
    code = _int32(code ^ ushr(code, 16))
    if code >= 0:
        return code
    return -code if code != -(1 << 31) else 0


@pytest.mark.parametrize("parallelism, expected", [
    (1, 128), (85, 128), (86, 256), (100, 256), (1000, 2048), (30000, UPPER_BOUND_MAX_PARALLELISM),
])
def test_default_max_parallelism(parallelism, expected):
    # Flink: round_up_pow2(p + p/2) clamped to [128, 32768]
    assert default_max_parallelism(parallelism) == expected
    assert DEFAULT_LOWER_BOUND_MAX_PARALLELISM <= default_max_parallelism(parallelism) <= UPPER_BOUND_MAX_PARALLELISM


def _java_row_of_pickled_key_hash(key) -> int:
    """Flink's ``Row.of(cloudpickle.dumps(key)).hashCode()`` (PyFlink's key_by without key_type),
    written out from RowUtils.deepHashCodeRow and Arrays.hashCode(byte[]) with Java int semantics."""
    import pickle
    h = 1
    for b in pickle.dumps(key, protocol=5):  # cloudpickle's protocol; same bytes for these keys
        h = _int32(31 * h + (b - 256 if b > 127 else b))
    leaf = _int32(31 * 1 + h)  # Arrays.deepHashCode(new Object[]{bytes})
    fields = _int32(31 * 1 + leaf)  # deepHashCodeArray(fieldByPosition)
    return _int32(31 * 0 + fields) & 0xFFFFFFFF  # RowKind.INSERT.toByteValue() == 0


@pytest.mark.parametrize("key", [0, 7, -1, 2**31, 2**70, "apple", "", "東京", b"raw", None, 0.5,
                                 ("a", 1), ("nested", (0.25, b"x")), ["l", 2]])
def test_hash_is_flinks_hash_of_pyflinks_pickled_key_row(key):
    assert stable_hash(key) == _java_row_of_pickled_key_hash(key)


def test_hash_matches_values_computed_by_flinks_own_classes():
    # Row.of(cloudpickle.dumps(k)).hashCode() and KeyGroupRangeAssignment.assignToKeyGroup(row, 128),
    # computed once with flink-dist 2.3.0's classes in a JVM.
    assert _int32(stable_hash("a")) == -2088826310
    assert assign_to_key_group("a", 128) == 33
    assert _int32(stable_hash(("nested", (0.25, b"x")))) == 1579040973
    assert assign_to_key_group(("nested", (0.25, b"x")), 128) == 106


def test_equal_python_keys_land_in_the_same_key_group():
    # bools and integral floats hash as the equal int (PyFlink would pickle them differently,
    # but streamkernel's per-key caches are dicts, in which 3, 3.0 and True == 1 are one key).
    assert assign_to_key_group(3, 128) == assign_to_key_group(3.0, 128)
    assert assign_to_key_group(1, 128) == assign_to_key_group(True, 128)
    assert assign_to_key_group(("a", 1), 128) == assign_to_key_group(("a", True), 128) \
        == assign_to_key_group(("a", 1.0), 128)


def test_keys_on_the_subtasks_real_pyflink_chose():
    # observed with PyFlink 2.3: key_by(lambda t: t[1]) at parallelism 3, get_index_of_this_subtask()
    seen = {"a": 0, "b": 0, "apple": 1, "kiwi": 1, "s1": 1, "north": 0, "": 2, "ünï": 2, 0: 0, 1: 0, 3: 1,
            100: 1, 12345: 2, -5: 2, 2**40: 0, (1, "x"): 2, ("a", "b"): 2, 1.5: 1, None: 2}
    assert {k: assign_key_to_operator(k, 128, 3) for k in seen} == seen


def test_keys_whose_pickle_depends_on_object_identity_hash_by_value():
    # pickle writes the same object twice as a reference, two equal objects in full: a key
    # repeating a str, bytes, tuple or list value hashes by value, so equal keys hash equally
    text = "ab"
    built = "".join(["a", "b"])
    assert text is not built
    for same, equal in [((text, text), (text, built)), ((b"xy", b"xy"), (b"xy", bytes(bytearray(b"xy")))),
                        (((text,), (text,)), ((text,), (built,))), ([text, [text]], [text, [built]])]:
        assert stable_hash(same) == stable_hash(equal)
        assert assign_to_key_group(same, 128) == assign_to_key_group(equal, 128)


def test_string_hash_is_stable_across_processes():
    keys = ["apple", "banana", "ζ", ""]
    script = (
        "from streamkernel.graph.keygroups import stable_hash, assign_to_key_group;"
        f"print([(stable_hash(k), assign_to_key_group(k, 128)) for k in {keys!r}])"
    )
    outputs = set()
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        outputs.add(subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                                   check=True).stdout)
    assert outputs == {str([(stable_hash(k), assign_to_key_group(k, 128)) for k in keys]) + "\n"}


@pytest.mark.parametrize("key", [0, 1, 42, -17, 2**31, "word", b"bytes", ("k", 2), None, True, 2.5])
def test_key_group_is_flinks_murmur_of_the_hash(key):
    assert assign_to_key_group(key, 128) == _java_murmur(stable_hash(key)) % 128
    assert 0 <= assign_to_key_group(key, 7) < 7


@pytest.mark.parametrize("max_parallelism, parallelism", [(128, 1), (128, 3), (128, 128), (10, 4), (7, 3), (4096, 100)])
def test_ranges_partition_key_groups_and_agree_with_the_index(max_parallelism, parallelism):
    ranges = [key_group_range_for_operator(max_parallelism, parallelism, i) for i in range(parallelism)]
    assert [g for r in ranges for g in r] == list(range(max_parallelism))  # contiguous, disjoint, complete
    for index, groups in enumerate(ranges):
        assert len(groups) >= max_parallelism // parallelism
        assert all(operator_index_for_key_group(max_parallelism, parallelism, g) == index for g in groups)


def test_keys_spread_over_subtasks():
    counts = Counter(assign_key_to_operator(f"user-{i}", 128, 4) for i in range(4000))
    assert set(counts) == {0, 1, 2, 3}
    assert min(counts.values()) > 4000 * 0.15


def test_key_moves_only_with_its_key_group_when_rescaling():
    for i in range(200):
        key = f"k{i}"
        group = assign_to_key_group(key, 128)
        for parallelism in (1, 2, 3, 8):
            index = assign_key_to_operator(key, 128, parallelism)
            assert group in key_group_range_for_operator(128, parallelism, index)


def test_key_groups_of_plain_keys_are_hashed_once_per_process(monkeypatch):
    """PyFlink's hash costs microseconds in Python: the group of a str, int or bytes key is
    computed once per process and max parallelism (every job of a TaskManager, the sender's
    routing and the keyed operator's check), other keys every time; the results are equal."""
    from streamkernel.graph import keygroups

    monkeypatch.setattr(keygroups, "_key_group_caches", {})
    hashed: list = []
    real = keygroups.stable_hash
    monkeypatch.setattr(keygroups, "stable_hash", lambda key: hashed.append(key) or real(key))
    keys = ["k1", 7, b"b", ("t", 1), 2.5, True]
    first = [assign_to_key_group(k, 128) for k in keys]
    second = [assign_to_key_group(k, 128) for k in keys] + [assign_key_to_operator(k, 128, 2) for k in keys]
    assert first == second[:len(keys)] == [_java_murmur(real(k)) % 128 for k in keys]
    assert hashed == keys + [("t", 1), 2.5, True] * 2  # the plain keys once, the others each time
    assert assign_to_key_group(True, 128) == assign_to_key_group(1, 128)  # equal keys, equal groups
    assert assign_to_key_group("k1", 256) == _java_murmur(real("k1")) % 256  # per max parallelism


def test_the_key_group_cache_is_bounded(monkeypatch):
    from streamkernel.graph import keygroups

    monkeypatch.setattr(keygroups, "_key_group_caches", {})
    monkeypatch.setattr(keygroups, "KEY_GROUP_CACHE_SIZE", 8)
    groups = [assign_to_key_group(i, 128) for i in range(20)]
    assert len(keygroups._key_group_caches[128]) <= 8
    assert groups == [assign_to_key_group(i, 128) for i in range(20)]
