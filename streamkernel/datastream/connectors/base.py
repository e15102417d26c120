"""The source interface shared by every connector, as PyFlink's ``connectors.base``.

A :class:`Source` is a *description* of where records come from (a collection, a number
range, a generator, files). It is plan data: it is placed in the StreamGraph, shipped to
TaskManagers and split across source subtasks by the runtime; reading happens there.
"""

from __future__ import annotations

import enum
from typing import Any

__all__ = ["Boundedness", "Source", "SourceFunction", "Sink", "SinkFunction"]


class Boundedness(enum.Enum):
    """Whether a source ends (BOUNDED) or runs until cancelled (CONTINUOUS_UNBOUNDED)."""

    BOUNDED = "BOUNDED"
    CONTINUOUS_UNBOUNDED = "CONTINUOUS_UNBOUNDED"


class Source:
    """Base of the new-style sources used with ``env.from_source(source, strategy, name)``."""

    #: the name Flink gives the source operator when none is passed
    default_name: str = "Source"
    #: True when every record the source reads already is a value of its ``get_produced_type()``
    #: as PyFlink gives it (no conversion at the source's typed boundary)
    emits_produced_type: bool = False

    def get_boundedness(self) -> Boundedness:
        """BOUNDED if the source ends by itself."""
        return Boundedness.BOUNDED

    @property
    def is_bounded(self) -> bool:
        """True if the source ends by itself."""
        return self.get_boundedness() is Boundedness.BOUNDED

    @property
    def max_parallelism(self) -> int | None:
        """The most source subtasks that can read in parallel (None: no limit)."""
        return None


class SourceFunction(Source):
    """Base of legacy sources used with ``env.add_source(source_func, name)``."""

    default_name = "Custom Source"

    def __init__(self, source_func: Any = None) -> None:
        self._j_function = source_func

    def get_java_function(self) -> Any:
        """PyFlink compatibility: the wrapped (here: Python) function object."""
        return self._j_function


class Sink:
    """Base of new-style sinks used with ``DataStream.sink_to(sink)``."""


class SinkFunction(Sink):
    """Base of legacy sinks used with ``DataStream.add_sink(sink_func)``."""

    def __init__(self, sink_func: Any = None) -> None:
        self._j_function = sink_func

    def get_java_function(self) -> Any:
        """PyFlink compatibility: the wrapped (here: Python) function object."""
        return self._j_function
