"""One RPC connection between the JobManager and a TaskManager: calls, tells and references.

Flink's components talk through an actor RPC system; here one authenticated connection
(:mod:`.transport`) per TaskManager carries three kinds of messages, each a small header
and a payload (cloudpickle, :mod:`.serialization`):

* a **call** (request/response, with an id): served on a thread of its own, so a call that
  blocks (``request_slots`` waiting for slots, a collect sink waiting for its reader) never
  blocks the connection; the caller waits up to a timeout for the **reply**;
* a **tell** (one-way): served one after the other on the connection's tell thread, so
  tells keep the order they were sent in (a task's RUNNING before its FINISHED);
* **bye**: the peer closes on purpose.

(All in one frame: a 4-byte header length, the pickled header, the payload.)

A gateway passed as an argument (``submit_task(..., job_master)``) travels as a
:class:`GatewayRef`: the sender *exports* the object under a reference id and the
receiver builds a proxy calling back over the same connection (or gets its own object back
when the reference points home). Objects reachable by the peer are only those exported
(``exports`` at construction, or passed as arguments); methods starting with ``_`` are refused.

When the connection dies (EOF, reset, :meth:`RpcConnection.close`) every pending call fails
at once with :class:`RpcConnectionLostError` and so does every later call or tell;
``on_close(connection, cause)`` runs once.
"""

from __future__ import annotations

import functools
import itertools
import logging
import pickle
import queue
import threading
import weakref
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional

from streamkernel.common.futures import result_within
from streamkernel.errors import StreamKernelError
from streamkernel.runtime.rpc.serialization import UnpickleHooks, dumps, loads, portable_exception
from streamkernel.runtime.rpc.transport import close_connection

__all__ = ["RpcConnection", "GatewayRef", "RpcConnectionLostError", "RpcTimeoutError", "RpcError"]

_LOG = logging.getLogger(__name__)

_CALL, _TELL, _REPLY, _BYE = 1, 2, 3, 4
_IDLE_THREAD_S = 30.0  # an idle call thread ends after this long


class RpcError(StreamKernelError):
    """A remote call could not be made or answered (the remote method's own errors are re-raised as they are)."""


class RpcConnectionLostError(RpcError):
    """The connection to the peer is gone (the peer process died, stopped or closed it)."""


class RpcTimeoutError(RpcError, TimeoutError):
    """A remote call got no answer within its timeout."""


@dataclass(frozen=True)
class GatewayRef:
    """A gateway object sent by reference: its id on the exporting side, its kind and a few
    read-only attributes (``job_id``, ``taskmanager_id``, ``data_address``) the proxy answers
    locally. ``home`` is "sender" (the sender exported it) or "receiver" (a proxy sent back:
    the receiver owns the object)."""

    ref_id: str
    kind: str
    attributes: tuple[tuple[str, Any], ...] = ()
    home: str = "sender"


class _CallThreads:
    """Daemon threads serving calls: an idle one takes the next call, else a new one starts.

    Idle threads end after ``_IDLE_THREAD_S`` or at :meth:`close`.
    """

    def __init__(self, name: str) -> None:
        self._name = name
        self._queue: "queue.SimpleQueue[Optional[Callable[[], None]]]" = queue.SimpleQueue()
        self._lock = threading.Lock()  # guards _idle, _threads and _closed
        self._idle = 0
        self._threads: set[threading.Thread] = set()
        self._closed = False
        self._submitted = 0  # calls handed to threads, and those done: in flight = the difference
        self._done = 0
        self._drained = threading.Condition(self._lock)

    def submit(self, work: Callable[[], None]) -> None:
        with self._lock:
            if self._closed:
                return
            self._queue.put(work)
            self._submitted += 1
            if self._idle > 0:
                self._idle -= 1
                return
            thread = threading.Thread(target=self._run, name=f"{self._name}-call", daemon=True)
            self._threads.add(thread)
        thread.start()

    def _run(self) -> None:
        while True:
            try:
                work = self._queue.get(timeout=_IDLE_THREAD_S)
            except queue.Empty:
                with self._lock:
                    # still counted idle unless a submit claimed us meanwhile (then work waits)
                    if self._idle > 0 and self._queue.empty():
                        self._idle -= 1
                        self._threads.discard(threading.current_thread())
                        return
                continue
            if work is None:
                with self._lock:
                    self._threads.discard(threading.current_thread())
                return
            try:
                work()
            finally:
                with self._lock:
                    self._idle += 1
                    self._done += 1
                    self._drained.notify_all()

    def drain(self, timeout: float) -> None:
        """Wait up to ``timeout`` s until no call is being served (other than the caller's own)."""
        own = 1 if threading.current_thread() in self._threads else 0
        with self._lock:
            self._drained.wait_for(lambda: self._submitted - self._done <= own, timeout)

    def close(self, timeout: float) -> None:
        with self._lock:
            self._closed = True
            threads = list(self._threads)
        for _ in threads:
            self._queue.put(None)
        for thread in threads:
            if thread is not threading.current_thread():
                thread.join(timeout)


class RpcConnection:
    """Calls and tells over one authenticated :class:`multiprocessing.connection.Connection`.

    ``exports`` are the objects the peer may call by name (``{"resource_manager": rm}``);
    ``hooks`` replace globals while unpickling what the peer sends (see
    :func:`.serialization.loads`); ``default_timeout`` (s) bounds calls made without one.
    Call :meth:`start` to begin reading.

    >>> rpc = RpcConnection(conn, name="TM taskmanager-1", exports={"driver": services})  # doctest: +SKIP
    >>> rpc.start(); rpc.call("resource_manager", "taskmanager_ids")                       # doctest: +SKIP
    """

    def __init__(self, conn: Any, *, name: str, exports: Optional[Mapping[str, Any]] = None,
                 hooks: Optional[UnpickleHooks] = None, default_timeout: float = 10.0,
                 on_close: Optional[Callable[["RpcConnection", BaseException], None]] = None) -> None:
        self._conn = conn
        self.name = name
        self.default_timeout = default_timeout
        self._hooks = dict(hooks or {})
        self._on_close = on_close
        # _lock guards the export tables, _pending, _closed and _cause; _send_lock keeps the
        # two frames of a message together on the wire.
        self._lock = threading.Lock()
        self._send_lock = threading.Lock()
        self._exports: dict[str, Any] = dict(exports or {})
        self._weak_exports: "weakref.WeakValueDictionary[str, Any]" = weakref.WeakValueDictionary()
        self._export_ids: dict[int, str] = {}
        self._proxies: dict[str, Any] = {}
        self._pending: dict[int, Future] = {}
        self._ids = itertools.count(1)
        self._closed = False
        self._cause: Optional[BaseException] = None
        self._tells: "queue.SimpleQueue[Optional[tuple]]" = queue.SimpleQueue()
        self._calls = _CallThreads(f"streamkernel-rpc-{name}")
        self._reader = threading.Thread(target=self._read_loop, name=f"streamkernel-rpc-{name}-reader", daemon=True)
        self._teller = threading.Thread(target=self._tell_loop, name=f"streamkernel-rpc-{name}-tells", daemon=True)

    def start(self) -> "RpcConnection":
        """Start reading messages (and serving tells); returns self."""
        self._reader.start()
        self._teller.start()
        return self

    @property
    def closed(self) -> bool:
        """True once the connection is gone."""
        return self._closed

    @property
    def close_cause(self) -> Optional[BaseException]:
        """Why the connection closed (None while open)."""
        return self._cause

    # ------------------------------------------------------------------ exports
    def export(self, obj: Any, kind: str, attributes: Optional[Mapping[str, Any]] = None) -> GatewayRef:
        """Make ``obj`` callable by the peer; returns the reference to send (same id for the same object)."""
        with self._lock:
            ref_id = self._export_ids.get(id(obj))
            if ref_id is None or self._lookup_locked(ref_id) is not obj:
                ref_id = f"{kind}-{next(self._ids)}"
                self._export_ids[id(obj)] = ref_id
                try:
                    self._weak_exports[ref_id] = obj
                except TypeError:
                    self._exports[ref_id] = obj
        return GatewayRef(ref_id, kind, tuple(dict(attributes or {}).items()))

    def _lookup_locked(self, ref_id: str) -> Any:
        obj = self._exports.get(ref_id)
        return obj if obj is not None else self._weak_exports.get(ref_id)

    def _lookup(self, ref_id: str) -> Any:
        with self._lock:
            obj = self._lookup_locked(ref_id)
        if obj is None:
            raise RpcError(f"{self.name}: no object {ref_id!r} is exported on this connection (gone?)")
        return obj

    def proxy(self, ref: GatewayRef) -> Any:
        """The proxy for a reference the peer exported (one per reference)."""
        from streamkernel.runtime.rpc.proxies import proxy_for  # the proxies build on this module

        with self._lock:
            existing = self._proxies.get(ref.ref_id)
            if existing is None:
                existing = self._proxies[ref.ref_id] = proxy_for(self, ref)
        return existing

    def _outgoing(self, value: Any) -> Any:
        from streamkernel.runtime.rpc.proxies import RemoteProxy, export_reference

        if isinstance(value, RemoteProxy):
            if value._rpc is self:
                return GatewayRef(value._ref.ref_id, value._ref.kind, value._ref.attributes, home="receiver")
            raise RpcError(f"{self.name}: cannot forward a proxy of another connection ({value!r})")
        ref = export_reference(self, value)
        return value if ref is None else ref

    def _incoming(self, value: Any) -> Any:
        if isinstance(value, GatewayRef):
            return self._lookup(value.ref_id) if value.home == "receiver" else self.proxy(value)
        return value

    # --------------------------------------------------------------- sending
    def _send(self, header: tuple, payload: bytes) -> None:
        head = pickle.dumps(header, protocol=pickle.HIGHEST_PROTOCOL)
        frame = len(head).to_bytes(4, "big") + head + payload
        with self._send_lock:
            if self._closed:
                raise self._lost_error()
            try:
                self._conn.send_bytes(frame)
            except (OSError, EOFError, ValueError) as exc:
                self._shutdown(exc)
                raise self._lost_error() from exc

    def _lost_error(self) -> RpcConnectionLostError:
        cause = self._cause
        return RpcConnectionLostError(f"the RPC connection {self.name} is lost"
                                      f"{f': {type(cause).__name__}: {cause}' if cause else ''}")

    def call(self, target: str, method: str, args: tuple = (), kwargs: Optional[Mapping[str, Any]] = None,
             timeout: Optional[float] = -1.0) -> Any:
        """Call ``target.method(*args, **kwargs)`` at the peer and return its result.

        Raises what the remote method raised, :class:`RpcTimeoutError` after ``timeout`` s
        (default :attr:`default_timeout`; None waits for ever) and
        :class:`RpcConnectionLostError` when the connection dies meanwhile.
        """
        if timeout is not None and timeout < 0:
            timeout = self.default_timeout
        payload = dumps((tuple(self._outgoing(a) for a in args),
                         {k: self._outgoing(v) for k, v in (kwargs or {}).items()}))
        future: Future = Future()
        with self._lock:
            if self._closed:
                raise self._lost_error()
            call_id = next(self._ids)
            self._pending[call_id] = future
        try:
            self._send((_CALL, call_id, target, method), payload)
            ok, value = result_within(future, timeout)
        except TimeoutError:
            raise RpcTimeoutError(f"{self.name}: {method}() on {target} got no answer within {timeout} s") from None
        finally:
            with self._lock:
                self._pending.pop(call_id, None)
        if ok:
            return self._incoming(value)
        raise value

    def tell(self, target: str, method: str, args: tuple = (), kwargs: Optional[Mapping[str, Any]] = None) -> None:
        """Send ``target.method(*args, **kwargs)`` without waiting; tells are served in sending order."""
        payload = dumps((tuple(self._outgoing(a) for a in args),
                         {k: self._outgoing(v) for k, v in (kwargs or {}).items()}))
        self._send((_TELL, 0, target, method), payload)

    # --------------------------------------------------------------- receiving
    def _read_loop(self) -> None:
        conn = self._conn
        while True:
            try:
                frame = conn.recv_bytes()
                size = int.from_bytes(frame[:4], "big")
                kind, call_id, target, method = pickle.loads(frame[4:4 + size])
                payload = memoryview(frame)[4 + size:]
            except Exception as exc:  # noqa: BLE001 - EOF, reset, closed under us, a garbled frame
                self._shutdown(exc if not self._closed else None)
                return
            if kind == _REPLY:
                with self._lock:
                    future = self._pending.get(call_id)
                if future is not None:
                    try:
                        future.set_result(loads(payload, self._hooks))
                    except Exception as exc:  # noqa: BLE001 - an answer we cannot unpickle
                        future.set_result((False, RpcError(f"{self.name}: cannot read the answer to {method}(): "
                                                           f"{type(exc).__name__}: {exc}")))
            elif kind == _CALL:
                self._calls.submit(functools.partial(self._serve_call, call_id, target, method, payload))
            elif kind == _TELL:
                self._tells.put((target, method, payload))
            elif kind == _BYE:
                self._shutdown(RpcConnectionLostError(f"{self.name}: the peer closed the connection"))
                return

    def _invoke(self, target: str, method: str, payload: bytes | memoryview) -> Any:
        if method.startswith("_"):
            raise RpcError(f"{self.name}: refusing to call private method {method!r} of {target!r}")
        obj = self._lookup(target)
        args, kwargs = loads(payload, self._hooks)
        args = tuple(self._incoming(a) for a in args)
        kwargs = {k: self._incoming(v) for k, v in kwargs.items()}
        return getattr(obj, method)(*args, **kwargs)

    def _serve_call(self, call_id: int, target: str, method: str, payload: bytes | memoryview) -> None:
        try:
            answer: tuple = (True, self._outgoing(self._invoke(target, method, payload)))
        except BaseException as exc:  # noqa: BLE001 - every error goes back to the caller
            answer = (False, portable_exception(exc))
        try:
            data = dumps(answer)
        except Exception as exc:  # noqa: BLE001 - an unpicklable result
            data = dumps((False, RpcError(f"{self.name}: the result of {method}() on {target} cannot be sent: "
                                          f"{type(exc).__name__}: {exc}")))
        try:
            self._send((_REPLY, call_id, target, method), data)
        except RpcConnectionLostError:
            pass

    def _tell_loop(self) -> None:
        while True:
            item = self._tells.get()
            if item is None:
                return
            target, method, payload = item
            try:
                self._invoke(target, method, payload)
            except Exception:  # noqa: BLE001 - a tell has nobody to answer to
                _LOG.exception("%s: tell %s() on %s failed", self.name, method, target)

    # ------------------------------------------------------------------ closing
    def _shutdown(self, cause: Optional[BaseException]) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._cause = cause or RpcConnectionLostError(f"{self.name}: closed")
            pending = list(self._pending.values())
            self._pending.clear()
        close_connection(self._conn)
        error = self._lost_error()
        for future in pending:
            if not future.done():
                future.set_result((False, error))
        self._tells.put(None)
        self._calls.close(0)
        if self._on_close is not None:
            try:
                self._on_close(self, self._cause)
            except Exception:  # noqa: BLE001
                _LOG.exception("%s: on_close callback failed", self.name)

    def close(self, timeout: float = 5.0) -> None:
        """Let the calls being served answer, say bye, close the connection and wait (up to
        ``timeout`` s) for its threads. Idempotent."""
        if not self._closed:
            self._calls.drain(timeout)
            try:
                head = pickle.dumps((_BYE, 0, "", ""))
                with self._send_lock:
                    self._conn.send_bytes(len(head).to_bytes(4, "big") + head)
            except (OSError, EOFError, ValueError):
                pass
            self._shutdown(RpcConnectionLostError(f"{self.name}: closed by this side"))
        current = threading.current_thread()
        for thread in (self._reader, self._teller):
            if thread is not current and thread.is_alive():
                thread.join(timeout)
        self._calls.close(timeout)

    def __repr__(self) -> str:
        return f"RpcConnection({self.name}, {'closed' if self._closed else 'open'})"
