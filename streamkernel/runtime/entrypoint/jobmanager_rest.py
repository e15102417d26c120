"""What the shell commands ask a JobManager's REST API: whether one answers, its RPC address
(``/jobmanager/config``), its registered TaskManagers. Errors are :class:`StandaloneClusterError`
naming the address."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from streamkernel.errors import StreamKernelError

__all__ = ["StandaloneClusterError", "rest_url_of", "get_json", "rpc_address_of", "registered_ids"]


class StandaloneClusterError(StreamKernelError):
    """A standalone cluster command cannot do what it was asked (one line naming what and where)."""


def rest_url_of(address: str) -> str:
    """``HOST:PORT`` (or a URL) as ``http://HOST:PORT``."""
    address = address.strip().rstrip("/")
    return address if "://" in address else f"http://{address}"


def get_json(rest_url: str, path: str, timeout: float = 10.0) -> Any:
    """GET ``rest_url + path`` as JSON; StandaloneClusterError naming the address when nothing answers."""
    try:
        with urllib.request.urlopen(rest_url + path, timeout=timeout) as response:
            return json.loads(response.read().decode("utf-8"))
    except urllib.error.HTTPError as error:
        raise StandaloneClusterError(f"{rest_url}{path} answered HTTP {error.code}: is {rest_url} a streamkernel "
                                     f"JobManager's REST API?") from None
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", error)
        raise StandaloneClusterError(f"no JobManager answers at {rest_url} ({reason})") from None
    except ValueError:
        raise StandaloneClusterError(f"{rest_url}{path} did not answer JSON: is {rest_url} a streamkernel "
                                     f"JobManager's REST API?") from None


def rpc_address_of(rest_url: str) -> tuple[str, int]:
    """The JobManager's RPC listener, from its ``/jobmanager/config``."""
    entries = {e.get("key"): e.get("value") for e in get_json(rest_url, "/jobmanager/config")
               if isinstance(e, dict)}
    host, port = entries.get("jobmanager.rpc.address"), entries.get("jobmanager.rpc.port")
    if not host or not str(port or "").isdigit() or int(str(port)) == 0:
        raise StandaloneClusterError(f"the JobManager at {rest_url} does not accept TaskManagers from outside: its "
                                     f"/jobmanager/config has no jobmanager.rpc.address/port (is it a standalone "
                                     f"cluster started with `streamkernel cluster start`?)")
    return str(host), int(str(port))


def registered_ids(rest_url: str) -> set[str]:
    """The ids of the TaskManagers registered with the JobManager at ``rest_url``."""
    return {tm.get("id") for tm in get_json(rest_url, "/taskmanagers").get("taskmanagers", [])}
