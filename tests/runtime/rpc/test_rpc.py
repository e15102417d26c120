"""The RPC layer between JobManager and TaskManagers: calls, ordered tells, references, failures, security."""

from __future__ import annotations

import os
import pathlib
import pickle
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from streamkernel.runtime.core.deployment import ExecutionAttemptId, ExecutionState
from streamkernel.runtime.rpc.connection import (
    GatewayRef,
    RpcConnection,
    RpcConnectionLostError,
    RpcError,
    RpcTimeoutError,
)
from streamkernel.runtime.rpc.proxies import gateway_kind
from streamkernel.runtime.taskmanager.proxy import TaskExecutorProxy
from streamkernel.runtime.rpc.serialization import RemoteError, dumps, importable_by_peer, portable_exception
from streamkernel.runtime.taskmanager.gateway import TaskExecutionState
from streamkernel.testing import wait_until
from streamkernel.runtime.rpc.transport import (
    AUTHKEY_ENV,
    AuthenticatedListener,
    ConnectionRefusedByPeerError,
    connect,
    new_cluster_secret,
)


class Service:
    """The object a test server exports as "svc"."""

    def __init__(self) -> None:
        self.seen: list = []
        self.release = threading.Event()
        self.waiting = threading.Event()  # set once a "wait" call is being served
        self.received: list = []

    def add(self, a, b):
        return a + b

    def note(self, value) -> None:
        self.seen.append(value)

    def wait(self):
        self.waiting.set()
        self.release.wait(10)
        return "released"

    def fail(self):
        raise KeyError("no such thing")

    def keep(self, gateway):
        self.received.append(gateway)
        return gateway

    def call_back(self, gateway, value):
        return gateway.update_task_execution_state(value)

    def _secret(self):
        return "never"


class FakeJobMaster:
    """Has the JobMasterGateway's methods: travels by reference."""

    job_id = "f" * 32

    def __init__(self) -> None:
        self.updates: list = []

    def update_task_execution_state(self, update):
        self.updates.append(update)
        return len(self.updates)

    def acknowledge_checkpoint(self, *args):
        pass

    def decline_checkpoint(self, *args):
        pass

    def disconnect_taskmanager(self, *args):
        pass


@pytest.fixture
def pair():
    """A client RpcConnection talking to a server exporting a Service as "svc"."""
    secret = new_cluster_secret()
    service = Service()
    servers: list[RpcConnection] = []
    ready = threading.Event()

    def handler(conn, peer):
        servers.append(RpcConnection(conn, name="server", exports={"svc": service}).start())
        ready.set()

    listener = AuthenticatedListener(("127.0.0.1", 0), secret, handler, name="test-rpc")
    client = RpcConnection(connect(listener.address, secret), name="client", default_timeout=30).start()
    assert ready.wait(30)
    yield client, servers[0], service
    client.close(1)
    for server in servers:
        server.close(1)
    listener.close()
    service.release.set()
    _wait_for_no_rpc_threads()


def _wait_for_no_rpc_threads() -> None:
    def rpc_threads() -> list[str]:
        return [t.name for t in threading.enumerate() if t.name.startswith("streamkernel-rpc-")]

    wait_until(lambda: not rpc_threads(), message="every streamkernel-rpc- thread to end")


# ------------------------------------------------------------------------ calls and tells
def test_call_returns_the_result_and_reraises_the_remote_error(pair) -> None:
    client, _, _ = pair
    assert client.call("svc", "add", (2, 3)) == 5
    assert client.call("svc", "add", ("a",), {"b": "b"}) == "ab"
    with pytest.raises(KeyError, match="no such thing"):
        client.call("svc", "fail")
    with pytest.raises(RpcError, match="private method"):
        client.call("svc", "_secret")
    with pytest.raises(RpcError, match="no object 'nope'"):
        client.call("nope", "add", (1, 2))


def test_tells_are_served_in_the_order_they_were_sent(pair) -> None:
    client, _, service = pair
    for i in range(2000):
        client.tell("svc", "note", (i,))
    wait_until(lambda: len(service.seen) >= 2000, message="the server to serve 2000 tells")
    assert service.seen == list(range(2000))


def test_a_blocking_call_does_not_block_the_connection(pair) -> None:
    client, _, service = pair
    answers: list = []
    waiter = threading.Thread(target=lambda: answers.append(client.call("svc", "wait", timeout=10)))
    waiter.start()
    assert service.waiting.wait(30), "the server never started serving wait()"
    # other calls and tells are served while "wait" blocks its own thread at the server
    assert client.call("svc", "add", (1, 1)) == 2
    client.tell("svc", "note", ("during",))
    assert client.call("svc", "add", (2, 2)) == 4
    # a tell is served on the tell thread, unordered with calls: wait for it, not for the call
    wait_until(lambda: "during" in service.seen, message="the tell sent while wait() blocks to be served")
    assert answers == [] and waiter.is_alive()  # wait() was still blocked all along
    service.release.set()
    waiter.join(30)
    assert answers == ["released"]


def test_a_call_times_out_and_the_connection_stays_usable(pair) -> None:
    client, _, service = pair
    started = time.monotonic()
    with pytest.raises(RpcTimeoutError, match=r"wait\(\) on svc got no answer within 0.2 s"):
        client.call("svc", "wait", timeout=0.2)
    assert time.monotonic() - started < 9  # well before wait() returns by itself (10 s)
    service.release.set()
    assert client.call("svc", "add", (1, 2)) == 3


def test_a_closed_peer_fails_pending_and_later_calls_at_once(pair) -> None:
    client, server, service = pair
    errors: list = []

    def pending() -> None:
        try:
            client.call("svc", "wait", timeout=30)
        except RpcConnectionLostError as error:
            errors.append(error)

    waiter = threading.Thread(target=pending)
    waiter.start()
    assert service.waiting.wait(30), "the server never started serving wait()"
    server.close(0.1)
    waiter.join(30)
    assert not waiter.is_alive() and len(errors) == 1
    with pytest.raises(RpcConnectionLostError, match="client is lost"):
        client.call("svc", "add", (1, 2))
    with pytest.raises(RpcConnectionLostError):
        client.tell("svc", "note", (1,))
    assert client.closed


_DYING_SERVER = textwrap.dedent("""
    import os, sys, threading
    from streamkernel.runtime.rpc.connection import RpcConnection
    from streamkernel.runtime.rpc.transport import connect
    class Hang:
        def hang(self, flag):
            open(flag, "w").close()  # the parent waits for this file: the call is being served
            threading.Event().wait()
        def pid(self):
            return os.getpid()
    host, port = sys.argv[1], int(sys.argv[2])
    rpc = RpcConnection(connect((host, port), bytes.fromhex(os.environ.pop("{env}"))), name="child",
                        exports={{"hang": Hang()}}).start()
    threading.Event().wait()
""")


def test_a_killed_peer_process_fails_the_pending_call_with_a_clear_error(tmp_path) -> None:
    secret = new_cluster_secret()
    connections: list[RpcConnection] = []
    ready = threading.Event()

    def handler(conn, peer):
        connections.append(RpcConnection(conn, name="JobManager<-child").start())
        ready.set()

    listener = AuthenticatedListener(("127.0.0.1", 0), secret, handler)
    env = {**os.environ, AUTHKEY_ENV: secret.hex()}
    child = subprocess.Popen([sys.executable, "-c", _DYING_SERVER.format(env=AUTHKEY_ENV),
                              *map(str, listener.address)], env=env)
    try:
        assert ready.wait(30)
        rpc = connections[0]
        assert rpc.call("hang", "pid") == child.pid
        errors: list = []
        flag = tmp_path / "hanging"
        waiter = threading.Thread(target=lambda: errors.append(pytest.raises(RpcConnectionLostError, rpc.call,
                                                                             "hang", "hang", (str(flag),),
                                                                             timeout=120)))
        waiter.start()
        wait_until(flag.exists, message="the child to serve the hang() call")
        os.kill(child.pid, signal.SIGKILL)
        waiter.join(60)
        assert not waiter.is_alive() and errors, "the pending call did not fail when its peer died"
        assert "JobManager<-child is lost" in str(errors[0].value)
    finally:
        child.kill()
        child.wait()
        for rpc in connections:
            rpc.close(1)
        listener.close()
    _wait_for_no_rpc_threads()


# ------------------------------------------------------------------------- references
def test_a_gateway_argument_travels_by_reference_and_calls_back(pair) -> None:
    client, _, service = pair
    master = FakeJobMaster()
    assert gateway_kind(master) == "JobMasterGateway" and gateway_kind(42) is None
    attempt = ExecutionAttemptId(master.job_id, 1, 0)
    running = TaskExecutionState(attempt, ExecutionState.RUNNING)
    finished = TaskExecutionState(attempt, ExecutionState.FINISHED)
    # the server gets a proxy whose methods call back over the same connection
    client.call("svc", "call_back", (master, running))  # the update is a tell: it comes soon after
    wait_until(lambda: master.updates, message="the update told back to the client")
    assert master.updates == [running]
    assert service.received == []  # call_back does not keep it
    returned = client.call("svc", "keep", (master,))
    assert returned is master  # a reference sent back home is the original object
    [kept] = service.received
    assert kept.job_id == master.job_id and type(kept).__name__ == "JobMasterProxy"
    kept.update_task_execution_state(finished)  # a tell: ordered, one-way
    wait_until(lambda: len(master.updates) >= 2, message="the second update told back to the client")
    assert [u.state for u in master.updates] == [ExecutionState.RUNNING, ExecutionState.FINISHED]


def test_task_executor_proxy_answers_its_attributes_locally() -> None:
    proxy = TaskExecutorProxy(None, GatewayRef("te-1", "TaskExecutorGateway",  # type: ignore[arg-type]
                                               (("taskmanager_id", "taskmanager-3"), ("data_address", ("h", 1)))))
    assert proxy.taskmanager_id == "taskmanager-3" and proxy.data_address == ("h", 1)


# ---------------------------------------------------------------------------- security
class _Trap:
    """Unpickling this creates a file: proof that something was unpickled."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (pathlib.Path.touch, (pathlib.Path(self.path),))


def _frame(payload: bytes) -> bytes:
    """multiprocessing.connection's framing: a 4-byte big-endian length, then the bytes."""
    return len(payload).to_bytes(4, "big") + payload


def test_a_peer_without_the_secret_is_refused_before_anything_is_unpickled(tmp_path) -> None:
    secret = new_cluster_secret()
    handled: list = []
    listener = AuthenticatedListener(("127.0.0.1", 0), secret, lambda conn, peer: handled.append(conn),
                                     name="test-security", handshake_timeout=10)
    trap = tmp_path / "unpickled"
    payload = pickle.dumps(_Trap(str(trap)))
    try:
        # 1. a raw socket that ignores the challenge and sends a pickle at once
        with socket.create_connection(listener.address, timeout=30) as raw:
            raw.sendall(_frame(payload) * 3)
            try:
                raw.recv(1024)  # the challenge; then the listener drops us
                while raw.recv(1024):
                    pass
            except OSError:
                pass
        # 2. a client with a wrong secret
        with pytest.raises(ConnectionRefusedByPeerError, match="could not open an authenticated connection"):
            connect(listener.address, b"wrong secret", timeout=30)
        wait_until(lambda: listener.refused >= 2, message="the listener to refuse both peers")
        assert listener.refused == 2
        assert handled == [] and not trap.exists()
        # control: the same bytes from an authenticated peer *are* unpickled (the trap works)
        conn = connect(listener.address, secret, timeout=30)
        wait_until(lambda: handled, message="the listener to hand over the authenticated connection")
        server = RpcConnection(handled[0], name="server").start()
        conn.send_bytes(len(payload).to_bytes(4, "big") + payload)
        wait_until(trap.exists, message="the authenticated peer's pickle to be unpickled (the trap file)")
        conn.close()
        server.close(1)
    finally:
        listener.close()


# ----------------------------------------------------------------------- serialization
def defined_in_this_test_module(x):
    return x * 7


def _load_in_fresh_python(data: bytes, sys_path: list[str]) -> str:
    code = ("import pickle, sys; sys.path[:] = [p for p in sys.path if p] + " + repr(sys_path) + "; "
            "f = pickle.loads(sys.stdin.buffer.read()); print(f(6))")
    done = subprocess.run([sys.executable, "-c", code], input=data, capture_output=True, timeout=60, cwd="/")
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode().strip()


def test_functions_of_modules_the_peer_cannot_import_travel_by_value(tmp_path) -> None:
    source = tmp_path / "user_code_file.py"
    source.write_text("FACTOR = 5\ndef scale(x):\n    return x * FACTOR\n")
    import importlib.util

    spec = importlib.util.spec_from_file_location("not_on_any_path.user_code", source)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        assert not importable_by_peer(spec.name)
        assert _load_in_fresh_python(dumps(module.scale), []) == "30"
    finally:
        del sys.modules[spec.name]
    # a function of this test module (pytest --import-mode=importlib) reaches a fresh interpreter
    assert _load_in_fresh_python(dumps(defined_in_this_test_module), list(sys.path)) == "42"
    assert importable_by_peer("json") and importable_by_peer("streamkernel.runtime.rpc.connection")


def test_a_user_subclass_of_an_abc_travels_by_value_with_the_peers_own_metaclass(tmp_path) -> None:
    """Python 3.11 freezes abc, os, io ...: their classes go by reference, so a user's
    ProcessWindowFunction (an ABC, through Generic) is rebuilt in the peer without a metaclass conflict."""
    assert all(importable_by_peer(m) for m in ("abc", "os", "io", "codecs"))
    source = tmp_path / "user_window_code.py"
    source.write_text(
        "from streamkernel.datastream import ProcessWindowFunction\n"
        "from streamkernel.datastream.window import TimeWindow\n"
        "class Sizes(ProcessWindowFunction[tuple, int, str, TimeWindow]):\n"
        "    def process(self, key, context, elements):\n"
        "        yield len(elements)\n"
        "    def __call__(self, x):\n"
        "        return sum(self.process('k', None, [0] * x))\n")
    import importlib.util

    spec = importlib.util.spec_from_file_location("not_on_any_path.user_window_code", source)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        assert _load_in_fresh_python(dumps(module.Sizes()), list(sys.path)) == "6"
    finally:
        del sys.modules[spec.name]


def test_unpicklable_exceptions_become_remote_errors() -> None:
    class Unpicklable(Exception):
        def __init__(self) -> None:
            super().__init__("has a lock")
            self.lock = threading.Lock()

    error = portable_exception(Unpicklable())
    assert isinstance(error, RemoteError) and "has a lock" in str(error) and "Unpicklable" in error.type_name
    assert "Unpicklable" in error.remote_traceback
    again = pickle.loads(pickle.dumps(error))
    assert str(again) == str(error)
    plain = ValueError("fine")
    assert portable_exception(plain) is plain
