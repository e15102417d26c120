"""The test helper that runs Flink 2.3's own ``flink`` CLI (``tests/flink_tools.py``).

What the CLI sends and prints is tested against streamkernel's real REST endpoint in
``tests/runtime/rest/test_flink_cli.py``; for the record, Flink 2.3's CLI sends (every path
under ``/v1``, every request with a JSON body, ``{}`` when it has none):

* ``flink list``: ``GET /v1/jobs/overview`` (each job needs ``jid``, ``name``, ``state``,
  ``start-time``, ``end-time``, ``duration``, ``last-modification``, ``tasks`` with ``total``
  and ``pending-operators``, or the CLI cannot parse it);
* ``flink cancel ID``: ``PATCH /v1/jobs/ID?mode=cancel``, answered ``202 {}``;
* ``flink savepoint ID DIR``: ``POST /v1/jobs/ID/savepoints`` with ``{"target-directory": DIR,
  "cancel-job": false, "formatType": "CANONICAL", "triggerId": null}`` -> ``202 {"request-id": T}``,
  then ``GET /v1/jobs/ID/savepoints/T`` until ``{"status": {"id": "COMPLETED"}, "operation":
  {"location": PATH}}``; it prints ``Savepoint completed. Path: PATH``; an error body's
  ``errors`` are printed;
* ``flink stop --savepointPath DIR ID``: ``POST /v1/jobs/ID/stop`` with ``{"targetDirectory": DIR,
  "drain": false, "formatType": "CANONICAL", "triggerId": null}``, then the same polling.

Here: the helper's own guarantees, which the endpoint tests do not show.
"""

from __future__ import annotations

import importlib.util
import socket
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location("flink_tools", Path(__file__).with_name("flink_tools.py"))
assert _spec is not None and _spec.loader is not None
flink_tools = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(flink_tools)


def test_nothing_listening_fails_at_once_instead_of_retrying() -> None:
    with socket.socket() as probe:  # a port nobody listens on once this is closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    code, out, err = flink_tools.run_flink_cli(["list"], f"127.0.0.1:{port}", 60.0)  # Flink's defaults retry ~75 s
    assert code != 0
    assert "Connection refused" in out + err


def test_a_bad_address_is_refused_before_running_anything() -> None:
    with pytest.raises(ValueError, match="rest_address must be host:port"):
        flink_tools.run_flink_cli(["list"], "http://127.0.0.1", 120.0)
