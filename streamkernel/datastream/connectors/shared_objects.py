"""Live objects shared by reference between a user's program and the job that runs it.

A few connectors are not just descriptions but hold live, in-process data: a
:class:`~streamkernel.datastream.connectors.memory_log.MemoryLog` that a notebook keeps
appending to, the buffer a collect sink fills, the rows a pandas sink gathers. The plan
(and with it the connector) may be copied or pickled on its way to a TaskManager; a copy
must still reach the *same* live object when it lands in the same process.

Each such object registers here under a random token; its connector pickles the token
(plus whatever a copy in another process needs) and, when unpickled, looks the token up.
The registry holds objects weakly: an object lives as long as the user's program or the
running plan refers to it.
"""

from __future__ import annotations

import threading
import uuid
import weakref
from typing import Any, Optional

__all__ = ["SharedObjectRegistry"]


class SharedObjectRegistry:
    """Live objects of this process by token (weakly held; thread-safe).

    >>> registry = SharedObjectRegistry()
    >>> class Box: pass
    >>> box = Box(); token = registry.register(box)
    >>> registry.get(token) is box
    True
    """

    def __init__(self) -> None:
        self._objects: "weakref.WeakValueDictionary[str, Any]" = weakref.WeakValueDictionary()
        self._lock = threading.Lock()  # guards _objects (registration from any thread)

    def register(self, obj: Any, token: Optional[str] = None) -> str:
        """Register ``obj`` (under ``token`` or a fresh one) and return the token."""
        token = token or uuid.uuid4().hex
        with self._lock:
            self._objects[token] = obj
        return token

    def get(self, token: str) -> Any:
        """The live object registered under ``token``, or None (gone, or another process)."""
        with self._lock:
            return self._objects.get(token)

    def unregister(self, token: str) -> None:
        """Forget ``token`` (no error if unknown)."""
        with self._lock:
            self._objects.pop(token, None)
