"""The client's side of a remote ``execute_and_collect()``: Flink's CollectResultFetcher.

:class:`CollectResultFetcher` asks the cluster's collect sink coordinator
(:mod:`.collect_coordinator`, through ``POST /jobs/:jobid/coordinators/:operatorid``) for the
results after the ones it has: each request carries the coordinator's version and the
client's offset, so it acknowledges what was received and a response lost in transit is
asked for again with the same offset (the same results come, none skipped or doubled).
Requests are signed with the cluster's secret and answers are checked against it before
anything of them is unpickled.

:func:`fetch_collect_request` is the one request (a RestClusterClient method in all but name:
the REST client module belongs to the submission side).
"""

from __future__ import annotations

import base64
import json
import secrets
import threading
import time
from typing import Any, Iterator, Optional

from streamkernel.runtime.rest.client import ClusterUnreachableError, RestClientError, RestClusterClient

__all__ = ["CollectResultFetcher", "CollectBatch", "fetch_collect_request", "DEFAULT_MAX_RESULTS",
           "DEFAULT_WAIT_MS", "UNREACHABLE_RETRY_S"]

#: Results one response carries at most.
DEFAULT_MAX_RESULTS = 16384
#: How long the cluster holds a request while no result is there (ms).
DEFAULT_WAIT_MS = 500
#: How long an unreachable cluster is asked again (the same offset) before the fetcher gives up (s).
UNREACHABLE_RETRY_S = 15.0


class CollectBatch(dict):
    """One coordination response: ``version``, ``offset`` (of its first result), ``results``,
    ``end`` (these are the last ones) and ``failure`` (why the job ended early, or None)."""


def fetch_collect_request(client: RestClusterClient, job_id: Any, operator_id: str, version: str, offset: int,
                          max_results: int = DEFAULT_MAX_RESULTS, wait_ms: int = DEFAULT_WAIT_MS,
                          release: bool = False) -> Optional[CollectBatch]:
    """One signed ``POST /jobs/:jobid/coordinators/:operatorid``; the checked, unpickled answer
    (None for a release). RestClientError for a refusal (401: the secret does not match)."""
    from streamkernel.runtime.rest.handlers.coordination import response_signature_body
    from streamkernel.runtime.rest.job_signature import SIGNATURE_HEADER, TIMESTAMP_HEADER, SignatureError, sign
    from streamkernel.runtime.rest.job_signature import verify

    nonce = secrets.token_hex(16)
    request = {"version": version, "offset": int(offset), "max-results": int(max_results), "wait-ms": int(wait_ms),
               "nonce": nonce, "release": bool(release)}
    body = json.dumps({"serializedCoordinationRequest": base64.b64encode(json.dumps(request).encode()).decode()})
    data = body.encode("utf-8")
    secret = client.secret()
    now = int(time.time() * 1000)
    headers = {"Content-Type": "application/json", TIMESTAMP_HEADER: str(now), SIGNATURE_HEADER: sign(secret, now, data)}
    _, answer = client.request("POST", f"/jobs/{job_id}/coordinators/{operator_id}", data, headers)
    if release:
        return None
    try:
        payload = base64.b64decode(str(answer.get("serializedCoordinationResponse", "")), validate=True)
        verify(secret, str(answer.get("timestamp", "")), str(answer.get("signature", "")),
               response_signature_body(nonce, payload))
    except (ValueError, SignatureError) as error:
        raise RestClientError(502, f"the answer of {client.url} to a collect request is not signed with the "
                                   f"cluster's secret ({error}); it was not unpickled") from None
    from streamkernel.runtime.rpc.serialization import loads

    return CollectBatch(loads(payload))


class CollectResultFetcher:
    """Fetches the results of collect sink ``operator_id`` of job ``job_id`` from the cluster, in order.

    :meth:`batches` yields lists of results until the job's last one; :meth:`release` tells the
    cluster the client is done. ``failure`` is set when the job ended early (failed, cancelled).
    """

    def __init__(self, client: RestClusterClient, job_id: Any, operator_id: str,
                 max_results: int = DEFAULT_MAX_RESULTS, wait_ms: int = DEFAULT_WAIT_MS) -> None:
        self.client = client
        self.job_id = str(job_id)
        self.operator_id = str(operator_id)
        self.max_results = max_results
        self.wait_ms = wait_ms
        self.version = ""
        self.offset = 0  # results received (and acknowledged by the next request)
        self.failure: Optional[str] = None
        self._released = threading.Event()

    def fetch(self) -> CollectBatch:
        """The next response (acknowledging the results before :attr:`offset`); asks again with the
        same offset while the cluster does not answer, for up to UNREACHABLE_RETRY_S s."""
        deadline = time.monotonic() + UNREACHABLE_RETRY_S
        while True:
            try:
                batch = fetch_collect_request(self.client, self.job_id, self.operator_id, self.version, self.offset,
                                              self.max_results, self.wait_ms)
                break
            except ClusterUnreachableError:
                if time.monotonic() > deadline or self._released.is_set():
                    raise
                self._released.wait(0.2)  # a pause before asking again (interrupted by release)
        assert batch is not None
        if int(batch["offset"]) != self.offset:
            raise RestClientError(502, f"the collect sink answered results from offset {batch['offset']}, asked "
                                       f"from {self.offset}")
        self.version = str(batch["version"])
        self.offset += len(batch["results"])
        return batch

    def batches(self) -> Iterator[list]:
        """The results as they arrive, one list per response, until the last one."""
        while not self._released.is_set():
            batch = self.fetch()
            if batch["results"]:
                yield list(batch["results"])
            if batch["end"]:
                self.failure = batch.get("failure")
                return

    def release(self) -> None:
        """Tell the cluster the results are no longer wanted (best effort: an unreachable cluster
        forgets them after ``collect-sink.client-timeout``)."""
        if self._released.is_set():
            return
        self._released.set()
        try:
            fetch_collect_request(self.client, self.job_id, self.operator_id, self.version, self.offset,
                                  release=True)
        except (ClusterUnreachableError, RestClientError):
            pass

    def __repr__(self) -> str:
        return f"CollectResultFetcher({self.operator_id[:8]} of job {self.job_id} at {self.client.url}, " \
               f"offset {self.offset})"
