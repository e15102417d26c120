"""How RPC messages become bytes and back: cloudpickle out, a hookable unpickler in.

Objects travel pickled with :mod:`cloudpickle`, so a user function defined in a notebook
(``__main__``) reaches a TaskManager in another process. cloudpickle pickles functions and
classes *by reference* (module + name) when their module can be imported, which is fast and
keeps class identity; a module the *peer* cannot import (a test module loaded by pytest's
``--import-mode=importlib`` under a name that is no package on ``sys.path``, a script run
with ``runpy``) must travel *by value*. :class:`RpcPickler` decides once per module: a
module is pickled by reference when a plain ``sys.path`` search (the TaskManager gets the
driver's ``sys.path``) finds it under its name at the same file; otherwise its functions
and classes are pickled by value (``cloudpickle.register_pickle_by_value``).

:func:`loads` takes ``hooks``: ``{(module, name): replacement}`` consulted when the
unpickler resolves a global. A TaskManager uses it to put forwarding objects behind the
collect and pandas sinks of the plans it receives (:mod:`..taskmanager.forwarding`).
"""

from __future__ import annotations

import io
import os
import pickle
import sys
import threading
import types
from typing import Any, Mapping, Optional

import cloudpickle

__all__ = ["dumps", "loads", "RpcPickler", "importable_by_peer", "UnpickleHooks", "RemoteError", "portable_exception"]

#: ``{(module, qualified name): object}``: what the unpickler returns instead of the global.
UnpickleHooks = Mapping[tuple[str, str], Any]

_lock = threading.Lock()  # guards _checked
_checked: dict[str, bool] = {}  # module name -> importable by a peer with our sys.path


def _find_spec(name: str, path: Optional[list[str]]) -> Any:
    """The spec a fresh import of ``name`` would find: sys.meta_path's finders, sys.modules ignored."""
    for finder in sys.meta_path:
        find_spec = getattr(finder, "find_spec", None)
        if find_spec is None:
            continue
        try:
            spec = find_spec(name, path, None)
        except (ImportError, ValueError, TypeError, AttributeError):
            continue
        if spec is not None:
            return spec
    return None


def importable_by_peer(module_name: str) -> bool:
    """True when a process with this ``sys.path`` would import ``module_name`` from the same file.

    Asks the import system's finders (``sys.meta_path``: ``sys.path`` entries, editable
    installs) the way a fresh import does, ignoring ``sys.modules``, which holds modules
    pytest or runpy loaded from a file under any name. Built-in and frozen modules (Python
    3.11 freezes ``abc``, ``os``, ``io``, ``codecs`` ...: their spec's origin is ``"frozen"``
    though the module has a ``__file__``), and streamkernel's own, count as importable.
    """
    module = sys.modules.get(module_name)
    if module is None or module_name == "__main__":
        return False
    if module_name == "streamkernel" or module_name.startswith("streamkernel."):
        return True
    origin = getattr(module, "__file__", None)
    if origin is None:
        return True  # built-in, frozen or namespace: resolved by name everywhere
    parts = module_name.split(".")
    path: Optional[list[str]] = None
    spec = None
    for i in range(len(parts)):
        spec = _find_spec(".".join(parts[: i + 1]), path)
        if spec is None:
            return False
        path = list(spec.submodule_search_locations or [])
    if spec is None or spec.origin is None:
        return False
    if spec.origin in ("frozen", "built-in"):
        return True  # a frozen stdlib module (abc, os, io ... since 3.11): the same in every process
    try:
        return os.path.samefile(spec.origin, origin)
    except OSError:
        return False


def _by_value_if_needed(module_name: Optional[str]) -> None:
    if not module_name or module_name == "__main__":
        return  # cloudpickle pickles __main__ by value already
    with _lock:
        known = _checked.get(module_name)
    if known is not None:
        return
    importable = importable_by_peer(module_name)
    with _lock:
        _checked[module_name] = importable
    if not importable:
        module = sys.modules.get(module_name)
        if module is not None:
            try:
                cloudpickle.register_pickle_by_value(module)
            except ValueError:
                pass


class RpcPickler(cloudpickle.Pickler):
    """cloudpickle, plus: functions and classes of modules the peer cannot import go by value."""

    def reducer_override(self, obj: Any) -> Any:
        """Register the module of a function or class for pickling by value when needed."""
        if isinstance(obj, (types.FunctionType, type)):
            _by_value_if_needed(getattr(obj, "__module__", None))
        return super().reducer_override(obj)


def dumps(obj: Any) -> bytes:
    """``obj`` pickled for a peer process (protocol 5, cloudpickle)."""
    buffer = io.BytesIO()
    RpcPickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(obj)
    return buffer.getvalue()


class _HookedUnpickler(pickle.Unpickler):
    def __init__(self, data: io.BytesIO, hooks: UnpickleHooks) -> None:
        super().__init__(data)
        self._hooks = hooks

    def find_class(self, module: str, name: str) -> Any:
        hook = self._hooks.get((module, name))
        if hook is not None:
            return hook
        return super().find_class(module, name)


def loads(data: bytes | memoryview, hooks: Optional[UnpickleHooks] = None) -> Any:
    """Unpickle ``data``; globals named in ``hooks`` resolve to their replacement."""
    if not hooks:
        return pickle.loads(data)
    return _HookedUnpickler(io.BytesIO(data), hooks).load()


class RemoteError(Exception):
    """An exception raised in a peer process that could not travel as itself (unpicklable):
    its type name, message and traceback text, as Flink's SerializedThrowable keeps them."""

    def __init__(self, type_name: str, message: str, traceback_text: str = "") -> None:
        super().__init__(f"{type_name}: {message}")
        self.type_name = type_name
        self.remote_traceback = traceback_text

    def __reduce__(self) -> tuple:
        return RemoteError, (self.type_name, str(self)[len(self.type_name) + 2:], self.remote_traceback)


def portable_exception(exc: Optional[BaseException]) -> Optional[BaseException]:
    """``exc`` itself if it pickles (for a peer), else a :class:`RemoteError` describing it."""
    if exc is None:
        return None
    try:
        dumps(exc)
        return exc
    except Exception:  # noqa: BLE001 - anything unpicklable inside the exception
        import traceback

        text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        return RemoteError(f"{type(exc).__module__}.{type(exc).__qualname__}", str(exc), text)
