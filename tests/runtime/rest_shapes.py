"""The shape of a REST answer: its JSON key paths with their types, and how two shapes compare.

Both sides of the REST fidelity test use it: ``scripts/record_flink_rest_answers.py`` turns a
real Flink 2.3 cluster's answers into shapes (the fixture ``rest/flink_rest_answers.json``),
and ``rest/test_flink_rest_fidelity.py`` turns streamkernel's answers into shapes and checks
that every path of Flink's is in ours with a type Flink's answer had there.

A path is written from the root: ``.vertices[].metrics.read-bytes`` (``[]``: any element of
an array, the union over its elements); keys that are ids (32 hex digits, or digits alone:
vertex ids, checkpoint ids, subtask indexes as map keys) become ``<id>`` and ``<n>``, so two
clusters' ids compare. Types are JSON Schema's: ``object``, ``array``, ``string``,
``integer``, ``number`` (a float), ``boolean``, ``null``.

Metric ids (``0.numRecordsIn``, ``0.count_per_key.currentInputWatermark``) are compared as sets
after :func:`metric_id_pattern` replaced the subtask index and known operator names.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping

__all__ = ["json_type", "shape", "compare_shapes", "metric_id_pattern", "operator_metric_name"]

_HEX_ID = re.compile(r"^[0-9a-fA-F]{32}$")
_NUMBER = re.compile(r"^\d+$")


def json_type(value: Any) -> str:
    """The JSON type name of a parsed JSON value (``integer`` for an int, ``number`` for a float)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    raise TypeError(f"not a parsed JSON value: {type(value).__name__}")


def _key(name: str) -> str:
    if _HEX_ID.match(name):
        return "<id>"
    if _NUMBER.match(name):
        return "<n>"
    return name


def shape(body: Any) -> dict[str, list[str]]:
    """Every key path of ``body`` with the sorted JSON types seen there (``""`` is the root).

        >>> shape({"a": [{"b": 1}, {"b": 1.5, "c": None}]})
        {'': ['object'], '.a': ['array'], '.a[]': ['object'], '.a[].b': ['integer', 'number'], '.a[].c': ['null']}
    """
    found: dict[str, set[str]] = {}

    def walk(value: Any, path: str) -> None:
        found.setdefault(path, set()).add(json_type(value))
        if isinstance(value, dict):
            for name, item in value.items():
                walk(item, f"{path}.{_key(str(name))}")
        elif isinstance(value, list):
            for item in value:
                walk(item, f"{path}[]")

    walk(body, "")
    return {path: sorted(types) for path, types in found.items()}


def _accepts(flink: set[str], ours: str) -> bool:
    if ours in flink or flink == {"null"}:  # Flink showed nothing there: any value fills it
        return True
    return ours == "integer" and "number" in flink  # a float field that happens to be whole


def compare_shapes(flink: Mapping[str, Iterable[str]], ours: Mapping[str, Iterable[str]]) -> list[tuple[str, str]]:
    """What ``ours`` lacks of ``flink``: (path, what is wrong) for each path missing, or holding a
    type Flink's answer never had there (an int where Flink has a float is fine; anything where
    Flink had only null)."""
    problems = []
    for path, types in flink.items():
        wanted = set(types)
        if path not in ours:
            problems.append((path, f"missing (Flink: {'|'.join(sorted(wanted))})"))
            continue
        wrong = sorted(t for t in ours[path] if not _accepts(wanted, t))
        if wrong:
            problems.append((path, f"{'|'.join(wrong)} where Flink has {'|'.join(sorted(wanted))}"))
    return problems


def operator_metric_name(name: str) -> str:
    """An operator's name as Flink's metric ids spell it: what is not a letter, digit, ``-`` or
    ``_`` becomes ``_`` (``"count per key"`` -> ``count_per_key``)."""
    return re.sub(r"[^A-Za-z0-9_\-]", "_", name)


def metric_id_pattern(metric_id: str, operators: Mapping[str, str], subtask_prefix: bool) -> str:
    """``metric_id`` with its subtask index (``subtask_prefix``: ids of a vertex, ``0.x``) written
    ``<subtask>`` and an operator's metric-group name (a key of ``operators``) written as its role
    (the value), and any other number in it ``<n>`` (a split's):
    ``0.Source__numbers.split.1.watermark.currentWatermark`` ->
    ``<subtask>.<source>.split.<n>.watermark.currentWatermark``."""
    rest = metric_id
    head = ""
    if subtask_prefix:
        index, _, rest = metric_id.partition(".")
        if not index.isdigit():
            return metric_id
        head = "<subtask>."
    for name, role in sorted(operators.items(), key=lambda item: -len(item[0])):
        if rest.startswith(name + "."):
            head, rest = f"{head}<{role}>.", rest[len(name) + 1:]
            break
    return head + ".".join("<n>" if part.isdigit() else part for part in rest.split("."))
