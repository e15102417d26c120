"""SIGTERM stops ``streamkernel run`` also when the kernel delivers it to a task thread."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pthread_kill to a chosen thread")

SCRIPT = textwrap.dedent("""
    import signal, threading
    from streamkernel.sigterm import exit_on_sigterm

    restore = exit_on_sigterm()
    ready = threading.Event()

    def task_thread():
        ready.wait()
        # what the kernel may do with `kill PID`: hand the signal to a thread other than main
        signal.pthread_kill(threading.get_ident(), signal.SIGTERM)
        threading.Event().wait(60)

    threading.Thread(target=task_thread, daemon=True).start()
    try:
        ready.set()
        threading.Event().wait()  # the main thread blocked in a lock for good, as in future.result()
        print("not interrupted")
    except SystemExit as exit_:
        print("exit", exit_.code)
    finally:
        restore()
    print("restored", signal.getsignal(signal.SIGTERM) is signal.SIG_DFL, signal.set_wakeup_fd(-1))
""")


def test_a_sigterm_caught_by_another_thread_still_ends_the_main_threads_wait() -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60)
    assert done.stdout.split("\n")[:2] == ["exit 143", "restored True -1"], done.stdout + done.stderr


def test_a_sigterm_to_the_main_thread_exits_once() -> None:
    script = SCRIPT.replace("signal.pthread_kill(threading.get_ident(), signal.SIGTERM)",
                            "signal.pthread_kill(threading.main_thread().ident, signal.SIGTERM)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.stdout.split("\n")[:2] == ["exit 143", "restored True -1"], done.stdout + done.stderr
