"""Where streamkernel's REST answers deliberately differ from Flink 2.3's: the one list, with reasons.

``rest/test_flink_rest_fidelity.py`` checks every key path, JSON type and metric id of Flink's
recorded answers (``flink_rest_answers.json``) against streamkernel's for a job of the same
shape; what it finds missing must be matched by an entry here, and an entry that matches
nothing missing fails the test (so the list never outlives the difference). ``docs/rest-api.md``
shows this list to users.

Each :class:`Difference` names resources (an ``fnmatch`` pattern over the recording's resource
keys, such as ``/taskmanagers/:taskmanagerid/metrics`` or ``/jobs/:jobid/vertices/:vertexid*``),
what of them (an ``fnmatch`` pattern over key paths, ``shape:<path>`` or ``values:<path>``, or metric ids,
``metric:<id>``, or ``status`` for the whole resource) and why.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Difference", "DIFFERENCES"]


@dataclass(frozen=True)
class Difference:
    """A deliberate difference: ``what`` of the ``resources`` is not as Flink has it, because ``reason``."""

    resources: str
    what: str
    reason: str


DIFFERENCES: tuple[Difference, ...] = ()
