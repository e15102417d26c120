"""A small client of the REST API for the tests (urllib from the standard library).

``RestClient(url).get("/jobs")`` returns (status, decoded JSON body); ``request`` sends any
method and body. It never raises for an HTTP error status: tests assert the status.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any, Optional


class RestClient:
    """Calls ``base_url`` (``http://HOST:PORT``) and decodes the JSON answers."""

    def __init__(self, base_url: str, timeout: float = 30.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout

    def request(self, method: str, path: str, body: Optional[bytes] = None,
                headers: Optional[dict] = None) -> tuple[int, Any]:
        """(status, JSON body or raw text when not JSON) of ``method path``."""
        req = urllib.request.Request(self.base_url + path, data=body, method=method,
                                     headers={"Content-Type": "application/json", **(headers or {})})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as response:
                status, raw = response.status, response.read()
        except urllib.error.HTTPError as error:
            status, raw = error.code, error.read()
        try:
            return status, json.loads(raw.decode("utf-8"))
        except ValueError:
            return status, raw.decode("utf-8", "replace")

    def get(self, path: str, body: Optional[bytes] = None) -> tuple[int, Any]:
        """``GET path`` (with ``body`` as Flink's CLI sends ``{}``)."""
        return self.request("GET", path, body)

    def ok(self, path: str) -> Any:
        """The body of a GET that must answer 200."""
        status, body = self.get(path)
        assert status == 200, f"GET {path}: {status} {body}"
        return body
