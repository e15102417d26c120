"""Where streamkernel's REST answers deliberately differ from Flink 2.3's, read from docs/rest-api.md.

The one list of differences, with their reasons, is the table between the
``<!-- rest-differences: begin -->`` and ``end`` markers of ``docs/rest-api.md`` (users read it
there). ``rest/test_flink_rest_fidelity.py`` checks every key path, JSON type and metric id of
Flink's recorded answers against streamkernel's: what is missing must be matched by an entry,
and an entry marked *always* that matches nothing fails the test.

Each :class:`Difference` names resources (a pattern over the recording's resource keys, such as
``/taskmanagers/:taskmanagerid/metrics`` or ``/jobs/:jobid/vertices/:vertexid*``), what of them
(``status``, ``shape:<path>``, ``values:<path>`` or ``metric:<id>``, a pattern too), whether it
differs on every machine, and why. In a pattern ``*`` is any text; everything else, brackets
included (``[source]``, ``[]``), is itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Difference", "DIFFERENCES", "read_differences", "DOCUMENT"]

DOCUMENT = Path(__file__).resolve().parents[2] / "docs" / "rest-api.md"
_BEGIN, _END = "<!-- rest-differences: begin -->", "<!-- rest-differences: end -->"
_CODE = re.compile(r"^`(.*)`$")


@dataclass(frozen=True)
class Difference:
    """``what`` of the ``resources`` is not as Flink has it, because ``reason``; ``always``: on
    every machine (else it may not differ, e.g. the interpreter's options)."""

    resources: str
    what: str
    always: bool
    reason: str

    def matches(self, resource: str, what: str) -> bool:
        """Whether this entry excuses ``what`` of ``resource``."""
        return _pattern(self.resources).fullmatch(resource) is not None and \
            _pattern(self.what).fullmatch(what) is not None


def _pattern(text: str) -> "re.Pattern[str]":
    return re.compile(".*".join(re.escape(part) for part in text.split("*")), re.DOTALL)


def read_differences(path: Path = DOCUMENT) -> tuple[Difference, ...]:
    """The table of ``path`` as Differences (ValueError naming the line when a row is malformed)."""
    text = path.read_text(encoding="utf-8")
    if _BEGIN not in text or _END not in text:
        raise ValueError(f"{path} lacks the markers {_BEGIN} ... {_END} around the differences table")
    rows = text.split(_BEGIN, 1)[1].split(_END, 1)[0].strip().splitlines()[2:]  # after the header and ---
    differences = []
    for row in rows:
        cells = [cell.strip() for cell in row.strip().strip("|").split("|")]
        resources, what = (_CODE.match(c) for c in cells[:2]) if len(cells) == 4 else (None, None)
        if resources is None or what is None or cells[2] not in ("yes", "no"):
            raise ValueError(f"{path}: a differences row must be | `resources` | `item` | yes/no | reason |: {row!r}")
        differences.append(Difference(resources.group(1), what.group(1), cells[2] == "yes", cells[3]))
    return tuple(differences)


DIFFERENCES: tuple[Difference, ...] = read_differences()
