"""Regressions that only show on some of the Python versions setup.cfg declares.

These run in the py_matrix subset (scripts/test_other_pythons.sh), so under every declared
Python the machine has. Before 3.11, ``concurrent.futures.TimeoutError`` is not the builtin
``TimeoutError``: code that waits on a future with a timeout and catches ``TimeoutError``
let it escape, so on 3.10 ``env.execute()`` of any job outliving one poll of its result
raised ``concurrent.futures.TimeoutError``.
"""

from __future__ import annotations

import concurrent.futures
import sys

import pytest

from streamkernel.common.futures import result_within
from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.runtime.minicluster import client

pytestmark = pytest.mark.py_matrix


def test_the_running_python_is_one_setup_cfg_declares() -> None:
    import configparser
    import pathlib

    setup = configparser.ConfigParser()
    setup.read(pathlib.Path(__file__).resolve().parents[1] / "setup.cfg")
    declared = {line.rsplit("::", 1)[1].strip() for line in setup["metadata"]["classifiers"].splitlines()
                if line.strip().startswith("Programming Language :: Python :: 3.")}
    assert "%d.%d" % sys.version_info[:2] in declared, declared


def test_execute_waits_past_its_result_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every wait for the job's result times out at once: execute() must keep waiting, not raise.
    monkeypatch.setattr(client, "_POLL_SECONDS", 0.001)
    seen: list = []
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    env.from_collection(list(range(2000))).key_by(lambda x: x % 10).reduce(lambda a, b: a + b) \
        .add_sink(seen.append)
    result = env.execute("outlives its result polls")
    assert result.get_job_id() is not None
    assert len(seen) == 2000 and max(seen) == sum(range(9, 2000, 10))


def test_waiting_on_a_future_raises_the_builtin_timeout_error() -> None:
    with pytest.raises(TimeoutError) as info:
        result_within(concurrent.futures.Future(), 0.01)
    assert type(info.value) is TimeoutError
    assert "no result within 0.01 s" in str(info.value)


def test_a_future_that_failed_with_a_timeout_error_raises_it_as_it_is() -> None:
    future: concurrent.futures.Future = concurrent.futures.Future()
    future.set_exception(TimeoutError("the remote side timed out"))
    with pytest.raises(TimeoutError, match="the remote side timed out"):
        result_within(future, 1.0)
    done: concurrent.futures.Future = concurrent.futures.Future()
    done.set_result(42)
    assert result_within(done, 0.0) == 42
