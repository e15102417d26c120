"""Flink's own Web UI, served from the jar it ships in.

Flink 2.3's dashboard is the ``web/`` folder of ``lib/flink-dist-*.jar`` in the
``apache-flink-libraries`` wheel (an optional install, never a dependency, never copied into
this repository). :func:`find_dashboard` locates that jar; :class:`DashboardFiles` reads its
``web/`` entries lazily and answers a request path with the file's bytes, content type and
caching headers, refusing any path that is not plainly a file under ``web/``; without the jar,
:func:`fallback_page` is the one page ``/`` shows.

How the dashboard finds the API: ``index.html`` has ``<base href="./">`` and loads every script,
style and asset by a relative path; the app routes with URL fragments (``#/overview``,
``#/job/running/<id>/overview``), and its API base URL is ``"."``, so every call
(``./overview``, ``./jobs/<id>``) goes to the directory ``index.html`` was served from, without
the ``/v1`` prefix. Serving the dashboard at ``/`` next to the API is all it needs.
"""

from __future__ import annotations

import html
import mimetypes
import os
import re
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Optional
from urllib.parse import unquote

from streamkernel.common.options import WebOptions
from streamkernel.errors import IllegalConfigurationError

if TYPE_CHECKING:
    import zipfile

__all__ = ["DashboardFile", "DashboardFiles", "find_dashboard", "entry_name", "content_type", "fallback_page",
           "INSTALL_HINT"]

INSTALL_HINT = "pip install --no-deps apache-flink-libraries==2.3.0"
_DIST_JAR = "flink-dist-*.jar"
_WEB_PREFIX = "web/"
# Angular's hashed bundles (main.a877f62051d76ab2.js, 8305.b7672008eafed781.js, styles.<hash>.css):
# their content never changes under that name.
_HASHED = re.compile(r"(^|/)[^/]+\.[0-9a-f]{16,}\.(js|css)$")
_IMMUTABLE = "public, max-age=31536000, immutable"
_REVALIDATE = "no-cache"
_TYPES = {
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".html": "text/html; charset=utf-8",
    ".json": "application/json",
    ".svg": "image/svg+xml",
    ".txt": "text/plain; charset=utf-8",
    ".xml": "application/xml",
    ".ico": "image/x-icon",
    ".png": "image/png",
    ".woff": "font/woff",
    ".woff2": "font/woff2",
    ".ttf": "font/ttf",
}


class DashboardFile(NamedTuple):
    """One file of the dashboard: its bytes, Content-Type, and the headers to send with it
    (``Content-Type``, ``Cache-Control``, ``ETag``, ``X-Content-Type-Options``). A handler
    answers ``304`` when the request's ``If-None-Match`` equals ``headers["ETag"]``."""

    body: bytes
    content_type: str
    headers: Mapping[str, str]


def find_dashboard(configuration: Optional[Mapping[str, Any]] = None) -> Optional[Path]:
    """The jar holding Flink's Web UI, or None when there is none.

    Looks, in order, at ``web.dashboard.jar`` in ``configuration`` (an error when set to
    something that is not a file), ``$FLINK_HOME/lib/flink-dist-*.jar``, and the ``lib/`` of
    an installed ``pyflink`` package (found without importing it).
    """
    configured = WebOptions.DASHBOARD_JAR.get(configuration or {})
    if configured:
        path = Path(configured).expanduser()
        if not path.is_file():
            raise IllegalConfigurationError(
                f"{WebOptions.DASHBOARD_JAR.key()}: {configured!r} is not a file (expected Flink's "
                f"lib/flink-dist-*.jar, from: {INSTALL_HINT})")
        return path
    flink_home = os.environ.get("FLINK_HOME")
    if flink_home:
        found = _dist_jar_in(Path(flink_home) / "lib")
        if found is not None:
            return found
    for package_dir in _pyflink_dirs():
        found = _dist_jar_in(package_dir / "lib")
        if found is not None:
            return found
    return None


def _dist_jar_in(lib: Path) -> Optional[Path]:
    jars = sorted(lib.glob(_DIST_JAR)) if lib.is_dir() else []
    return jars[-1] if jars else None


def _pyflink_dirs() -> list[Path]:
    import importlib.util

    try:
        spec = importlib.util.find_spec("pyflink")  # a top-level name: finds, never imports
    except (ImportError, ValueError):
        return []
    if spec is None or not spec.submodule_search_locations:
        return []
    return [Path(location) for location in spec.submodule_search_locations]


class DashboardFiles:
    """The ``web/`` entries of a Flink dist jar, read on first request and kept in memory
    (at most the dashboard's 15 MB, and only the files browsers ask for).

    ``get("/")`` is ``web/index.html``; ``get("/main.a877f62051d76ab2.js")`` is that bundle.
    A path that is not plainly a file under ``web/`` (``..`` or ``.`` segments, an absolute
    or drive path, a backslash, NUL, ``%``-encoded or double-encoded forms of these, a
    directory) is refused with None, as is a missing file: the handler answers 404.
    """

    def __init__(self, jar: Path) -> None:
        self._jar = Path(jar)
        self._lock = threading.Lock()
        self._zip: Optional[zipfile.ZipFile] = None
        self._cache: dict[str, DashboardFile] = {}

    @property
    def jar(self) -> Path:
        """The jar the files are read from."""
        return self._jar

    def get(self, request_path: str) -> Optional[DashboardFile]:
        """The file for ``request_path`` (the URL's path, as sent or decoded), or None."""
        name = entry_name(request_path)
        if name is None:
            return None
        with self._lock:
            cached = self._cache.get(name)
            if cached is not None:
                return cached
            archive = self._open()
            try:
                info = archive.getinfo(name)
            except KeyError:
                return None
            if info.is_dir():
                return None
            body = archive.read(info)
            found = DashboardFile(body, content_type(name), _headers(name, info.CRC, info.file_size))
            self._cache[name] = found
            return found

    def close(self) -> None:
        """Close the jar (a later :meth:`get` opens it again)."""
        with self._lock:
            if self._zip is not None:
                self._zip.close()
                self._zip = None
            self._cache.clear()

    def _open(self) -> zipfile.ZipFile:
        if self._zip is None:
            import zipfile

            self._zip = zipfile.ZipFile(self._jar)
        return self._zip


def entry_name(request_path: str) -> Optional[str]:
    """The jar entry (``web/...``) for a request path, or None when the path is refused.

    The path is %-decoded once; a ``%`` left after that (double encoding), NUL, a backslash,
    a colon, an empty, ``.`` or ``..`` segment, or a leading ``//`` is refused.
    """
    if not isinstance(request_path, str):
        return None
    path = request_path.split("?", 1)[0].split("#", 1)[0]
    try:
        decoded = unquote(path, errors="strict") if "%" in path else path
    except UnicodeDecodeError:
        return None
    if any(bad in decoded for bad in ("%", "\x00", "\\", ":")):
        return None
    if decoded.startswith("/"):
        decoded = decoded[1:]
    if decoded in ("", "index.html"):
        return _WEB_PREFIX + "index.html"
    segments = decoded.split("/")
    if any(segment in ("", ".", "..") for segment in segments):
        return None  # absolute ("//x"), a directory ("x/"), or traversal
    return _WEB_PREFIX + decoded


def content_type(name: str) -> str:
    """The Content-Type for a file name (text types with ``charset=utf-8``)."""
    suffix = os.path.splitext(name)[1].lower()
    known = _TYPES.get(suffix)
    if known is not None:
        return known
    guessed, _ = mimetypes.guess_type(name)
    return guessed or "application/octet-stream"


def _headers(name: str, crc: int, size: int) -> dict[str, str]:
    return {
        "Content-Type": content_type(name),
        "Cache-Control": _IMMUTABLE if _HASHED.search(name) else _REVALIDATE,
        "ETag": f'"{crc:08x}-{size:x}"',
        "X-Content-Type-Options": "nosniff",
    }


def fallback_page(api_paths: Iterable[str]) -> str:
    """The page ``/`` shows without Flink's dashboard: how to get it, and the API's paths."""
    items = "\n".join(f"<li><code>{html.escape(path)}</code></li>" for path in api_paths)
    return f"""<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>streamkernel REST API</title></head>
<body>
<h1>streamkernel REST API</h1>
<p>This JobManager speaks Flink's REST API. Flink's own Web UI is not installed here; to see it at
this address, install the jars it ships in (no Python dependencies come with them) and restart the cluster:</p>
<pre>{html.escape(INSTALL_HINT)}</pre>
<p>or point <code>{html.escape(WebOptions.DASHBOARD_JAR.key())}</code> (or <code>$FLINK_HOME</code>) at
Flink's <code>lib/flink-dist-*.jar</code>.</p>
<h2>API</h2>
<ul>
{items}
</ul>
<p>Every path also answers under <code>/v1</code>. Flink's CLI works against this address:
<code>flink list -m HOST:PORT</code>.</p>
</body>
</html>
"""
