"""``zookeeper://HOST:PORT[,HOST:PORT...]/CLUSTER-ID[?root=/PATH]``: a highly available cluster named
by its ZooKeeper quorum and cluster id, as clients give it (``%flink connect``, ``streamkernel run -m``).

    >>> conf = ha_configuration_from_url("zookeeper://zk1:2181,zk2:2181/prod?root=/flink-ha")
    >>> conf["high-availability.zookeeper.quorum"], conf["high-availability.cluster-id"]
    ('zk1:2181,zk2:2181', '/prod')
    >>> conf["high-availability.zookeeper.path.root"]
    '/flink-ha'

Each mistake is one :class:`ZooKeeperUrlError` (a ValueError) naming the part of the URL that is wrong.
"""

from __future__ import annotations

import urllib.parse
from typing import Optional

__all__ = ["SCHEME", "ZooKeeperUrlError", "ha_configuration_from_url", "is_zookeeper_url"]

SCHEME = "zookeeper://"
_FORM = "zookeeper://HOST:PORT[,HOST:PORT...]/CLUSTER-ID[?root=/PATH]"


class ZooKeeperUrlError(ValueError):
    """A ``zookeeper://`` URL that is not ``zookeeper://HOST:PORT[,...]/CLUSTER-ID[?root=/PATH]``."""


def is_zookeeper_url(text: str) -> bool:
    """Whether ``text`` is meant as a ``zookeeper://`` URL (its scheme, in any case)."""
    return text.strip().lower().startswith(SCHEME)


def _fail(url: str, what: str) -> ZooKeeperUrlError:
    return ZooKeeperUrlError(f"{url!r}: {what} (expected {_FORM})")


def _quorum(url: str, netloc: str) -> str:
    if not netloc:
        raise _fail(url, "no ZooKeeper quorum after zookeeper://")
    entries = [part.strip() for part in netloc.split(",")]
    for entry in entries:
        host, sep, port = entry.rpartition(":")
        if not entry or not sep or not host.strip("[]") or not port.isdigit() or not 0 < int(port) < 65536:
            raise _fail(url, f"quorum entry {entry!r} is not HOST:PORT with a port 1-65535")
    return ",".join(entries)


def _path(url: str, text: str, what: str) -> str:
    parts = text.strip("/").split("/")
    if not text.strip("/") or any(p in ("", ".", "..") for p in parts):
        raise _fail(url, f"{what} {text!r} is not a ZooKeeper path (no empty, '.' or '..' parts)")
    return "/" + "/".join(parts)


def ha_configuration_from_url(url: str, storage_dir: Optional[str] = None) -> dict[str, str]:
    """The Flink high-availability keys ``url`` stands for: ``high-availability.type: zookeeper``,
    ``.zookeeper.quorum``, ``.cluster-id`` (``/CLUSTER-ID``), ``.zookeeper.path.root`` when the URL
    has ``?root=/PATH``, and ``high-availability.storageDir`` when ``storage_dir`` is given."""
    text = url.strip()
    if not is_zookeeper_url(text):
        raise _fail(url, "the scheme must be zookeeper://")
    split = urllib.parse.urlsplit(text)
    if split.fragment:
        raise _fail(url, f"unexpected fragment '#{split.fragment}'")
    quorum = _quorum(url, split.netloc)
    if not split.path.strip("/"):
        raise _fail(url, "no cluster id after the quorum (/CLUSTER-ID, e.g. /default)")
    conf = {
        "high-availability.type": "zookeeper",
        "high-availability.zookeeper.quorum": quorum,
        "high-availability.cluster-id": _path(url, split.path, "cluster id"),
    }
    try:
        query = urllib.parse.parse_qs(split.query, keep_blank_values=True, strict_parsing=bool(split.query))
    except ValueError:
        raise _fail(url, f"query '?{split.query}' is not NAME=VALUE") from None
    for name, values in query.items():
        if name != "root":
            raise _fail(url, f"unknown query parameter {name!r} (known: root)")
        if len(values) != 1:
            raise _fail(url, "root given more than once")
        if not values[0].startswith("/"):
            raise _fail(url, f"root {values[0]!r} must start with '/'")
        conf["high-availability.zookeeper.path.root"] = _path(url, values[0], "root")
    if storage_dir is not None:
        conf["high-availability.storageDir"] = storage_dir
    return conf
