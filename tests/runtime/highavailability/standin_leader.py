"""TEST FIXTURE: a leader whose election the test drives, for the client-side tests (a client must
follow whatever ZooKeeper publishes; the real leading JobManager, ``MiniCluster`` with the HA keys,
is tested in test_jobmanager_*.py, test_ha_cluster_processes.py and by the one client test that
runs two of them). Here the test decides when the leader resigns while its process and REST API
stay up, and puts arbitrary plans into its store, which the real JobManager never does.

Run as a script (``python standin_leader.py CONF_JSON``) it starts a MiniCluster(rest=True) whose
REST secret is the HA cluster's (``read_or_create_ha_secret``), joins the election through
``create_ha_services(conf)`` with ``contender_info = {"rest_url": ...}``, and on grant confirms the
REST URL for ``rest_server`` and ``dispatcher`` (and a placeholder RPC address for
``resource_manager``), as the leading JobManager will. It prints ``REST <url>`` once started, then
obeys lines on stdin: ``wait-leader`` (prints ``LEADER <session>`` once granted), ``put JOB_ID`` (an
execution plan through its own ``execution_plan_store()``, prints ``PUT``), ``resign`` (closes
its election, prints ``RESIGNED``); end of input stops it all.

:class:`StandInLeader` runs that script in a process of its own (a notebook's ``%flink connect``
refuses while a cluster runs in the same process).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import uuid
from pathlib import Path
from typing import Any, Optional

REPOSITORY = Path(__file__).resolve().parents[3]


def _main(conf: dict[str, str]) -> None:  # pragma: no cover - runs in the fixture's process
    from streamkernel.runtime.highavailability import DISPATCHER, RESOURCE_MANAGER, REST_SERVER, create_ha_services
    from streamkernel.runtime.highavailability.cluster_secret import read_or_create_ha_secret
    from streamkernel.runtime.minicluster import minicluster

    minicluster.new_cluster_secret = lambda: read_or_create_ha_secret(conf)  # type: ignore[attr-defined]
    cluster = minicluster.MiniCluster(1, 2, rest=True, configuration={"rest.port": "0"}).start()
    url = str(cluster.rest_url)
    services: Any = create_ha_services(conf)
    services.contender_info = {"rest_url": url}
    granted = threading.Event()
    elections: dict[str, Any] = {}

    class Contender:
        def __init__(self, component: str, address: str) -> None:
            self.component, self.address = component, address

        def grant_leadership(self, session_id: uuid.UUID) -> None:
            elections[self.component].confirm_leadership(session_id, self.address)
            if self.component == REST_SERVER:
                granted.session = session_id  # type: ignore[attr-defined]
                granted.set()

        def revoke_leadership(self) -> None:
            granted.clear()

        def handle_error(self, error: Exception) -> None:
            print(f"ERROR {error}", flush=True)

    for component, address in ((REST_SERVER, url), (DISPATCHER, url), (RESOURCE_MANAGER, "127.0.0.1:6123")):
        elections[component] = services.leader_election(component)
        elections[component].start_leader_election(Contender(component, address))
    print(f"REST {url}", flush=True)
    for line in sys.stdin:
        command, _, argument = line.strip().partition(" ")
        if command == "wait-leader":
            granted.wait()
            print(f"LEADER {granted.session}", flush=True)  # type: ignore[attr-defined]
        elif command == "put":
            services.execution_plan_store().put_execution_plan(argument, {"job": argument})
            print("PUT", flush=True)
        elif command == "resign":
            services.close()
            print("RESIGNED", flush=True)
    services.close()
    cluster.stop()


class StandInLeader:
    """The script above in a process of its own (see the module's docstring); :meth:`stop` ends it."""

    def __init__(self, conf: dict[str, str], env: Optional[dict[str, str]] = None) -> None:
        environment = dict(os.environ if env is None else env)
        environment["PYTHONPATH"] = os.pathsep.join([str(REPOSITORY), environment.get("PYTHONPATH", "")])
        self.process = subprocess.Popen([sys.executable, __file__, json.dumps(conf)], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True, env=environment, cwd=str(REPOSITORY))
        self.rest_url = self._expect("REST ")

    def _expect(self, prefix: str) -> str:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()  # the fixture answers every command with one line
        if not line.startswith(prefix):
            self.stop()
            raise AssertionError(f"the stand-in leader answered {line!r}, expected {prefix!r}...")
        return line[len(prefix):].strip()

    def _ask(self, command: str, answer: str) -> str:
        assert self.process.stdin is not None
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        return self._expect(answer)

    def wait_leader(self) -> str:
        """Block until this process leads; its leader session id."""
        return self._ask("wait-leader", "LEADER ")

    def put_execution_plan(self, job_id: str) -> None:
        """Persist an execution plan for ``job_id`` through this leader's store."""
        self._ask(f"put {job_id}", "PUT")

    def resign(self) -> None:
        """Close this process's election (its REST API keeps running)."""
        self._ask("resign", "RESIGNED")

    def stop(self) -> None:
        """End the process (closing its stdin), killed if it does not end within a minute."""
        if self.process.stdin is not None and not self.process.stdin.closed:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


if __name__ == "__main__":  # pragma: no cover
    _main(json.loads(sys.argv[1]))
