"""SIGTERM as a SystemExit in the main thread, also when the kernel hands it to another thread.

``kill PID`` (how a detached ``streamkernel run`` is stopped) is a process-directed signal:
Linux delivers it to any thread that does not block it, and CPython runs the Python handler
only in the main thread, the next time that thread executes bytecode. A main thread blocked
in a lock (``future.result()``, ``Event.wait()``) is woken only when the signal lands on it
(``EINTR``); when it lands on a task thread, the main thread sleeps on and the run never
stops (measured: about 1 run in 10 under load). So the signal's wakeup fd is watched by a
thread that, if the handler has not run shortly after a signal arrived, sends SIGTERM to the
main thread itself (``pthread_kill``), which interrupts its wait.
"""

from __future__ import annotations

import signal
import socket
import threading
from typing import Any, Callable, Optional

__all__ = ["exit_on_sigterm"]

#: How long the watcher leaves the main thread to run the handler before it redirects the signal.
REDIRECT_AFTER_S = 0.2


def exit_on_sigterm() -> Optional[Callable[[], None]]:
    """Make SIGTERM a ``SystemExit(143)`` in the main thread (so clusters stop and remove their
    files; the default action would end the process at once). Returns the function that
    restores what was there, or None when not on the main thread or SIGTERM is not at its default."""
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return None
    handled = threading.Event()

    def terminate(signum: int, _frame: Any) -> None:
        if handled.is_set():
            return  # the watcher's copy of a signal the main thread already took: exit once
        handled.set()
        raise SystemExit(128 + signum)

    reader, writer = socket.socketpair()
    writer.setblocking(False)
    previous_fd = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    previous = signal.signal(signal.SIGTERM, terminate)
    main = threading.main_thread().ident
    stopped = threading.Event()

    def watch() -> None:
        # the watcher holds both ends: a caller that drops ``restore`` must not let the writer be
        # collected (its descriptor, reused by a socket opened later, would receive the signal's byte)
        assert writer is not None
        while not stopped.is_set():
            try:
                data = reader.recv(64)
            except OSError:
                return
            if not data or stopped.is_set():
                return
            if signal.SIGTERM in data and not handled.wait(REDIRECT_AFTER_S) and main is not None:
                signal.pthread_kill(main, signal.SIGTERM)

    watcher = threading.Thread(target=watch, name="SIGTERM watcher", daemon=True)
    watcher.start()

    def restore() -> None:
        stopped.set()
        signal.signal(signal.SIGTERM, previous)
        signal.set_wakeup_fd(previous_fd)
        writer.close()  # ends the watcher's recv
        watcher.join(1.0)
        reader.close()

    return restore
