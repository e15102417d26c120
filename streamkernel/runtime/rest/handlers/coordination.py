"""``POST /jobs/:jobid/coordinators/:operatorid``: Flink's ClientCoordinationHandler, for collect sinks.

Flink's body is ``{"serializedCoordinationRequest": "<base64>"}`` and its answer
``{"serializedCoordinationResponse": "<base64>"}``. Here the request is base64 of JSON
(:data:`REQUEST_FIELDS`: the CollectCoordinationRequest's ``version`` and ``offset``, how
many results at most, how long to wait for some, a nonce, ``release``) and the response
base64 of the pickled answer of :meth:`~..collect_coordinator.CollectSinkCoordinator.fetch`
(the results are Python objects). Requests are signed with the cluster's secret like job
submissions (:mod:`..job_signature`: headers, checked before anything else, replays refused):
one without a valid signature gets 401 and no result. The answer is signed too (``timestamp``
and ``signature`` next to the response, over the request's nonce and the payload), so the
client unpickles only what the cluster it trusts sent for this request.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
from typing import Any

from streamkernel.runtime.rest.handlers.base import RestError, RestHandler, bad_parameter
from streamkernel.runtime.rest.job_signature import SIGNATURE_HEADER, TIMESTAMP_HEADER, SignatureError, sign, verify
from streamkernel.runtime.rest.json_views.ids import HEX32

__all__ = ["ROUTES", "ClientCoordinationHandler", "REQUEST_FIELDS", "MAX_WAIT_MS", "response_signature_body"]

#: The fields of a coordination request (JSON inside ``serializedCoordinationRequest``).
REQUEST_FIELDS = ("version", "offset", "max-results", "wait-ms", "nonce", "release")
#: The longest a request waits for results (ms): below the client's request timeout.
MAX_WAIT_MS = 2000


def response_signature_body(nonce: str, payload: bytes) -> bytes:
    """What the response's signature covers: the request's nonce, then the payload."""
    return nonce.encode("utf-8") + b"\n" + payload


def _request(body: Any) -> dict[str, Any]:
    """The decoded coordination request; 400 naming what is wrong."""
    if not isinstance(body, dict) or not isinstance(body.get("serializedCoordinationRequest"), str):
        raise RestError(400, "Bad request: expected {\"serializedCoordinationRequest\": \"<base64>\"} "
                             "(Flink's ClientCoordinationRequestBody)")
    try:
        request = json.loads(base64.b64decode(body["serializedCoordinationRequest"], validate=True))
    except (binascii.Error, ValueError) as error:
        raise RestError(400, f"Bad request: serializedCoordinationRequest is not base64 of a JSON collect request "
                             f"({error})") from None
    if not isinstance(request, dict):
        raise RestError(400, "Bad request: the collect request is not a JSON object")
    for name, kind in (("version", str), ("offset", int), ("max-results", int), ("wait-ms", int), ("nonce", str)):
        value = request.get(name)
        if not isinstance(value, kind) or isinstance(value, bool) or (isinstance(value, int) and value < 0):
            raise RestError(400, f"Bad request: the collect request's {name!r} must be a "
                                 f"{'non-negative int' if kind is int else 'string'}, got {value!r}")
    return request


class ClientCoordinationHandler(RestHandler):
    """``POST /jobs/:jobid/coordinators/:operatorid``: fetch (and acknowledge) a collect sink's results."""

    async def post(self, jobid: str, operatorid: str) -> None:
        """Flink's ClientCoordinationHandler for the collect sink's CollectCoordinationRequest."""
        from streamkernel.runtime.rest.collect_coordinator import CoordinationError, coordinator_for

        body = bytes(self._body)
        secret = self.context.cluster_secret
        try:  # before the request is looked at
            timestamp, signature = self.request.headers.get(TIMESTAMP_HEADER), self.request.headers.get(SIGNATURE_HEADER)
            verify(secret, timestamp, signature, body)
            self.context.replay_guard.check(signature or "", timestamp or "")
        except SignatureError as error:
            raise RestError(401, str(error).replace("job submission", "coordination request")) from None
        details = self.job(jobid)
        if not HEX32.match(operatorid):
            raise bad_parameter("operatorid", operatorid)
        request = _request(self.json_body())
        coordinator = coordinator_for(details.job_id, operatorid)
        if coordinator is None:
            raise RestError(404, f"Coordinator of operator {operatorid.lower()} of job {details.job_id} not found "
                                 f"(not a collect sink of this job, or its results were released)")
        if request.get("release"):
            coordinator.release()
            self.write_json({"serializedCoordinationResponse": ""})
            return
        wait_s = min(int(request["wait-ms"]), MAX_WAIT_MS) / 1000.0
        try:  # fetch may wait for results: on a worker thread, never the endpoint's loop
            payload = await asyncio.get_running_loop().run_in_executor(
                None, _fetch_pickled, coordinator, request["version"], request["offset"], request["max-results"],
                wait_s)
        except CoordinationError as error:
            raise RestError(400, f"Bad request: {error}") from None
        now = _now_ms()
        self.write_json({"serializedCoordinationResponse": base64.b64encode(payload).decode("ascii"),
                         "timestamp": now,
                         "signature": sign(secret, now, response_signature_body(request["nonce"], payload))})


def _fetch_pickled(coordinator: Any, version: str, offset: int, max_results: int, wait_s: float) -> bytes:
    """The coordinator's answer, pickled (both on the worker thread)."""
    from streamkernel.runtime.rpc.serialization import dumps

    return dumps(coordinator.fetch(version, offset, max_results, wait_s))


def _now_ms() -> int:
    import time

    return int(time.time() * 1000)


ROUTES = [
    ("/jobs/:jobid/coordinators/:operatorid", ClientCoordinationHandler),
]
