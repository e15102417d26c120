"""TEST FIXTURE (not the product's HA JobManager): a JobManager process whose leader election the
TaskManager tests drive. The fencing test needs a JobManager that stops leading while its process,
RPC listener and tasks stay up (``close``), which the real one never does on purpose (it suspends
its jobs when revoked); the real leading JobManager and TaskManagers following it through a
``kill -9`` are tested in test_ha_cluster_processes.py.

``python ha_leader_fixture.py CONFIGURATION_JSON`` starts a :class:`StandaloneSessionCluster`
(the cluster's secret from ``read_or_create_ha_secret``, its own configuration without the
high-availability keys so that it never joins an election by itself), then joins the election
through ``create_ha_services(conf)``: on grant its contenders confirm ``resource_manager`` with the
cluster's RPC address (``HOST:PORT``) and ``rest_server`` with its REST URL, as the real leader
publishes them. It reports on stdout, one JSON object a line:

* ``{"event": "started", "pid", "rest_url", "rpc_address"}`` once the cluster serves and it contends;
* ``{"event": "granted", "session_id"}`` once both addresses are confirmed;
* ``{"event": "revoked"}``; ``{"event": "closed"}`` after the ``close`` command.

Commands on stdin: ``close`` leaves the election (closes the HA services: the process stays alive and
its cluster keeps running, but it no longer leads); ``quit`` (or stdin closing) stops it.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import uuid
from typing import Any

from streamkernel.runtime.entrypoint.cluster_entrypoint import StandaloneSessionCluster
from streamkernel.runtime.highavailability import RESOURCE_MANAGER, REST_SERVER, create_ha_services
from streamkernel.runtime.highavailability.cluster_secret import read_or_create_ha_secret

_OUT = threading.Lock()


def say(**event: Any) -> None:
    with _OUT:
        print(json.dumps(event), flush=True)


class ConfirmingContender:
    """Confirms ``address`` for its component on every grant (the fixture's stand-in for a leader's startup)."""

    def __init__(self, election: Any, address: str, granted: Any) -> None:
        self.election, self.address, self.granted = election, address, granted

    def grant_leadership(self, session_id: uuid.UUID) -> None:
        self.election.confirm_leadership(session_id, self.address)
        self.granted(self.election.component, session_id)

    def revoke_leadership(self) -> None:
        say(event="revoked", component=self.election.component)

    def handle_error(self, error: Exception) -> None:
        say(event="error", error=str(error))


def main(configuration: dict[str, str]) -> int:
    secret = read_or_create_ha_secret(configuration)
    own = {k: v for k, v in configuration.items() if not k.startswith("high-availability")}
    own.setdefault("rest.port", "0")
    cluster = StandaloneSessionCluster(secret, "process", configuration=own)
    cluster.start(make_current=False)
    host, port = cluster.rpc_address
    confirmed: dict[uuid.UUID, set[str]] = {}
    lock = threading.Lock()

    def granted(component: str, session_id: uuid.UUID) -> None:
        with lock:
            done = confirmed.setdefault(session_id, set())
            done.add(component)
            complete = done == {RESOURCE_MANAGER, REST_SERVER}
        if complete:
            say(event="granted", session_id=str(session_id))

    services = create_ha_services(configuration)
    for component, address in ((RESOURCE_MANAGER, f"{host}:{port}"), (REST_SERVER, str(cluster.rest_url))):
        election = services.leader_election(component)
        election.start_leader_election(ConfirmingContender(election, address, granted))
    say(event="started", pid=os.getpid(), rest_url=cluster.rest_url, rpc_address=f"{host}:{port}")
    closed = False
    try:
        for line in sys.stdin:
            if line.strip() == "close" and not closed:
                services.close()
                closed = True
                say(event="closed")
            elif line.strip() == "quit":
                break
    finally:
        if not closed:
            services.close()
        cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(json.loads(sys.argv[1])))
