"""The signature of a job submitted through the REST API: HMAC-SHA256 under the cluster's secret.

A submission's body is the pickled job; unpickling runs code, so the endpoint checks the
signature (:func:`verify`, constant time) before it looks at a single byte of the body. The
signature covers the timestamp and the body (``HMAC(secret, b"<ms>\\n" + body)``); a timestamp
more than :data:`MAX_SKEW_MS` away from the cluster's clock is refused, and a
:class:`ReplayGuard` refuses a signature it accepted before within that window, so a recorded
request cannot be replayed, later or at once.
"""

from __future__ import annotations

import hashlib
import hmac
import threading
import time
from typing import TYPE_CHECKING, Iterable, Optional, Union

if TYPE_CHECKING:  # pragma: no cover
    from streamkernel.runtime.rest.accepted_requests import AcceptedRequestStore

__all__ = ["CONTENT_TYPE", "TIMESTAMP_HEADER", "SIGNATURE_HEADER", "MAX_SKEW_MS", "SignatureError", "sign",
           "signed_headers", "verify", "ReplayGuard"]

#: The content type of a streamkernel job submission (the job pickled with cloudpickle).
CONTENT_TYPE = "application/vnd.streamkernel.job+pickle"
#: Milliseconds since the epoch when the client signed the request.
TIMESTAMP_HEADER = "X-Streamkernel-Timestamp"
#: ``hmac-sha256=<hex>`` of the timestamp and the body.
SIGNATURE_HEADER = "X-Streamkernel-Signature"
#: How far (ms) a request's timestamp may be from the cluster's clock: five minutes.
MAX_SKEW_MS = 5 * 60 * 1000
_SCHEME = "hmac-sha256="


class SignatureError(Exception):
    """A request whose signature is missing, malformed, wrong or too old (answered 401)."""


def sign(secret: bytes, timestamp_ms: int, body: bytes) -> str:
    """The signature header's value for ``body`` sent at ``timestamp_ms``."""
    mac = hmac.new(secret, f"{int(timestamp_ms)}\n".encode("ascii"), hashlib.sha256)
    mac.update(body)
    return _SCHEME + mac.hexdigest()


def signed_headers(secret: bytes, body: bytes, now_ms: Optional[int] = None) -> dict[str, str]:
    """The headers of a signed submission of ``body``."""
    timestamp = int(now_ms if now_ms is not None else time.time() * 1000)
    return {"Content-Type": CONTENT_TYPE, TIMESTAMP_HEADER: str(timestamp),
            SIGNATURE_HEADER: sign(secret, timestamp, body)}


def verify(secret: bytes, timestamp: Optional[str], signature: Optional[str],
           body: Union[None, bytes, Iterable[bytes]], now_ms: Optional[int] = None) -> None:
    """Raise SignatureError (saying what is wrong) unless ``signature`` signs ``timestamp`` and
    ``body`` under ``secret`` and ``timestamp`` is within :data:`MAX_SKEW_MS` of now.

    ``body`` None checks the headers alone (before a large body is read); an iterable of
    chunks is read as the body (one spooled to a file)."""
    if not secret:
        raise SignatureError("this cluster has no secret to check submissions against")
    if not signature or not timestamp:
        raise SignatureError(f"Unauthorized: a job submission must be signed with the cluster's secret "
                             f"({TIMESTAMP_HEADER} and {SIGNATURE_HEADER} headers; streamkernel run -m signs it)")
    text = timestamp.strip()
    if not (text.isascii() and text.isdigit() and len(text) <= 18):  # "²³".isdigit(); int() refuses it (and 5,000 digits)
        raise SignatureError(f"Unauthorized: malformed {TIMESTAMP_HEADER} header {text[:40]!r}")
    now = int(now_ms if now_ms is not None else time.time() * 1000)
    if abs(now - int(text)) > MAX_SKEW_MS:
        raise SignatureError(f"Unauthorized: the request's timestamp is {abs(now - int(text)) // 1000} s away from "
                             f"the cluster's clock (at most {MAX_SKEW_MS // 1000} s allowed)")
    if body is None:
        return
    mac = hmac.new(secret, f"{int(text)}\n".encode("ascii"), hashlib.sha256)  # as sign(), chunk by chunk
    for chunk in (body,) if isinstance(body, (bytes, bytearray, memoryview)) else body:
        mac.update(chunk)
    if not hmac.compare_digest((_SCHEME + mac.hexdigest()).encode("ascii"), signature.strip().encode("utf-8",
                                                                                                    "replace")):
        raise SignatureError("Unauthorized: the request's signature does not match the cluster's secret")


class ReplayGuard:
    """The signatures a cluster accepted in the last :data:`MAX_SKEW_MS`: one seen again is refused.

    A timestamp older than the window is refused by :func:`verify` already, so only signatures
    within the window need remembering; older ones are dropped as new ones arrive. ``store``
    (:mod:`.accepted_requests`): where the requests checked ``durable`` (job submissions) are
    also recorded, so that another JobManager of the cluster, or this one restarted, refuses them.
    """

    def __init__(self, store: "Optional[AcceptedRequestStore]" = None) -> None:
        self.store = store
        self._seen: dict[str, int] = {}  # signature -> its timestamp (ms)
        self._lock = threading.Lock()
        self._purged_at = 0  # ms: expired signatures are dropped at most once a second (collect fetches
        # are frequent: a scan per request would grow with the requests of the last five minutes)

    def check(self, signature: str, timestamp: str, now_ms: Optional[int] = None, durable: bool = False) -> None:
        """Remember a verified request's signature; SignatureError if it was accepted before.
        ``durable``: in the cluster's store too (:class:`~.accepted_requests.AcceptedRequestStoreError`
        when it cannot be written: the request is refused)."""
        now = int(now_ms if now_ms is not None else time.time() * 1000)
        key = signature.strip()
        with self._lock:
            if now - self._purged_at >= 1000:
                self._purged_at = now
                for old in [k for k, t in self._seen.items() if now - t > MAX_SKEW_MS]:
                    del self._seen[old]
            if key in self._seen:
                raise _replayed()
            self._seen[key] = int(timestamp.strip())
        if durable and self.store is not None and not self.store.record(key, int(timestamp.strip()), now):
            raise _replayed()


    def refuse_accepted(self, signature: str, timestamp: str) -> None:
        """SignatureError if a request with this signature was accepted before (here, or by another
        JobManager of the cluster: the store); records nothing. A replay is refused before its body
        is read; :meth:`check` still decides once the body is verified."""
        key = signature.strip()
        with self._lock:
            seen = key in self._seen
        stamp = timestamp.strip()
        if seen or (self.store is not None and stamp.isascii() and stamp.isdigit()
                    and self.store.contains(key, int(stamp))):
            raise _replayed()


def _replayed() -> SignatureError:
    return SignatureError("Unauthorized: this signed request was already submitted (a replay); "
                          "streamkernel run -m signs every submission anew")
