"""BatchSortingInput and Flink's serialized key order (streamkernel.runtime.operators.batch_sorting)."""

from __future__ import annotations

import pickle
from types import SimpleNamespace

from streamkernel.common import Types
from streamkernel.common.watermark_strategy import MAX_WATERMARK, MIN_WATERMARK
from streamkernel.runtime.operators.batch_sorting import BatchSortingInput, key_order, serialized_key, sort_key_function


def test_serialized_key_is_pyflinks_java_key_row():
    data = pickle.dumps("a")
    assert serialized_key("a") == b"\x00" + len(data).to_bytes(4, "big") + data
    assert serialized_key(None) == b"\x20"  # RowSerializer's null bit, no field
    assert serialized_key(-2, Types.INT()) == b"\x00\xff\xff\xff\xfe"
    assert serialized_key("é", Types.STRING()) == bytes([0, 2, 0xE9, 0x01])  # length+1, 7-bit groups


def test_key_order_compares_signed_bytes_then_length():
    assert key_order(b"\x80") < key_order(b"\x7f")  # -128 < 127 as Java bytes
    assert key_order(b"\x01") < key_order(b"\x01\x00")  # a prefix first
    keys = [200, 0, -1, 5]
    assert sorted(keys, key=lambda k: key_order(serialized_key(k, Types.INT()))) == [-1, 200, 0, 5]


class _Head:
    """Records what the sorting input calls on it."""

    def __init__(self):
        self.calls: list = []
        self.current_watermark = MIN_WATERMARK
        self._timer_services: list = []
        self.context = SimpleNamespace(keyed_backend=None)
        self.output = SimpleNamespace(emit=None, emit_side=None, emit_watermark_status=None,
                                      emit_watermark=lambda ts: self.calls.append(("downstream watermark", ts)))

    def process_batch(self, values, timestamps):
        self.calls.append(("batch", values, timestamps))

    def process_watermark(self, timestamp):
        self.calls.append(("watermark", timestamp))
        self.output.emit_watermark(timestamp)

    def end_input(self):
        self.calls.append(("end",))


def test_sort_key_function_caches_only_keys_that_serialize_alike_when_equal():
    """Cached str/int/bytes keys give the uncached bytes; keys equal in Python but pickled
    apart (0, False, 0.0; (0,) and (False,)) keep distinct sort keys, in any order of arrival."""
    order_of = sort_key_function()
    keys = [0, False, 0.0, "a", b"a", 0, "a", (0,), (False,), -0.0, True, 1]
    assert [order_of(k) for k in keys] == [key_order(serialized_key(k)) for k in keys]
    assert len({order_of(k) for k in keys}) == 10
    as_string = sort_key_function(Types.STRING())
    assert as_string("x") == as_string("x") == key_order(serialized_key("x", Types.STRING()))


def test_sorting_input_feeds_key_by_key_in_timestamp_order_and_holds_watermarks_back():
    head = _Head()
    sorting = BatchSortingInput(head, lambda r: r[0])
    sorting.process_batch([("bb", 1), ("a", 2), ("bb", 3)], [30, 20, 10])
    sorting.process_watermark(25)  # dropped
    sorting.process_batch([("a", 4)], [5])
    assert head.calls == []  # nothing reaches the operator before the input ends
    sorting.end_input()
    assert head.calls == [
        ("batch", [("a", 4), ("a", 2)], [5, 20]), ("watermark", MAX_WATERMARK),
        ("batch", [("bb", 3), ("bb", 1)], [10, 30]), ("watermark", MAX_WATERMARK),
        ("watermark", MAX_WATERMARK), ("downstream watermark", MAX_WATERMARK), ("end",),
    ]
    assert head.current_watermark == MIN_WATERMARK
