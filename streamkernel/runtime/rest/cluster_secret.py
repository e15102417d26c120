"""Where a cluster's secret lives for the clients of the same user, and how a client finds it.

A cluster's secret is the HMAC key its TaskManagers and its data plane authenticate with
(:func:`~streamkernel.runtime.rpc.transport.new_cluster_secret`); a job submitted through the
REST API (``streamkernel run -m HOST:PORT job.py``) is signed with it, since submitting runs
user code on the cluster. A MiniCluster serving REST writes it to
``$STREAMKERNEL_HOME/clusters/<host>-<port>.secret`` (``~/.streamkernel`` by default; the
directory mode 0700, the file 0600, the secret in hex) and removes it when it stops, so a
client on the same machine finds it from the cluster's address alone.

A client takes, in order: ``--secret-file`` (:data:`SECRET_FILE_ENV`), the hex secret in
:data:`SECRET_ENV` (the variable TaskManager processes get it through), the file of the
address. A secret file that others may read, another user's, or a symbolic link is refused, as
ssh refuses such a key (:mod:`~streamkernel.runtime.rpc.secret_file`).
"""

from __future__ import annotations

import os
import re
import socket
from pathlib import Path
from typing import Optional

from streamkernel.runtime.rpc.secret_file import SecretError, read_secret_file, write_private_file
from streamkernel.runtime.rpc.secret_file import secret_from_hex as _from_hex
from streamkernel.runtime.rpc.transport import AUTHKEY_ENV

__all__ = ["HOME_ENV", "SECRET_ENV", "SECRET_FILE_ENV", "SecretError", "streamkernel_home", "secret_path",
           "write_secret_file", "remove_secret_file", "read_secret_file", "find_secret"]

#: The base directory of streamkernel's per-user files (default ``~/.streamkernel``).
HOME_ENV = "STREAMKERNEL_HOME"
#: A cluster's secret in hex (the variable TaskManager processes receive it through).
SECRET_ENV = AUTHKEY_ENV
#: A file holding a cluster's secret in hex (what ``--secret-file`` sets).
SECRET_FILE_ENV = "STREAMKERNEL_SECRET_FILE"

_UNSAFE_CHARS = re.compile(r"[^A-Za-z0-9._-]")


def streamkernel_home() -> Path:
    """``$STREAMKERNEL_HOME``, else ``~/.streamkernel``."""
    home = os.environ.get(HOME_ENV, "").strip()
    return Path(home).expanduser() if home else Path.home() / ".streamkernel"


def secret_path(host: str, port: int) -> Path:
    """The secret file of the cluster whose REST API is at ``host:port``.

        >>> secret_path("127.0.0.1", 8081).name
        '127.0.0.1-8081.secret'
    """
    return streamkernel_home() / "clusters" / f"{_UNSAFE_CHARS.sub('_', host.strip('[]'))}-{int(port)}.secret"


def write_secret_file(host: str, port: int, secret: bytes) -> Path:
    """Write ``secret`` (hex) for the cluster at ``host:port``, readable by the user only; returns the path."""
    path = secret_path(host, port)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(path.parent, 0o700)
    write_private_file(path, secret.hex().encode("ascii") + b"\n")  # atomically, never through a link
    return path


def remove_secret_file(path: Optional[Path]) -> None:
    """Remove a secret file written by :func:`write_secret_file` (gone already: nothing to do)."""
    if path is None:
        return
    try:
        path.unlink()
    except FileNotFoundError:
        pass


def find_secret(host: str, port: int, secret_file: Optional[str] = None) -> bytes:
    """The secret of the cluster at ``host:port``: ``secret_file`` (else ``$STREAMKERNEL_SECRET_FILE``),
    else ``$STREAMKERNEL_CLUSTER_SECRET`` (hex), else the file the cluster wrote for this address
    (also under the addresses ``host`` resolves to). SecretError names every place looked at."""
    explicit = secret_file or os.environ.get(SECRET_FILE_ENV, "").strip() or None
    if explicit:
        return read_secret_file(Path(explicit).expanduser())
    text = os.environ.get(SECRET_ENV, "").strip()
    if text:
        return _from_hex(text, f"${SECRET_ENV}")
    candidates = [secret_path(host, port)]
    for name in _aliases(host):
        path = secret_path(name, port)
        if path not in candidates:
            candidates.append(path)
    for path in candidates:
        if os.path.lexists(path):  # a link there is refused by name, not skipped
            return read_secret_file(path)
    looked = ", ".join(f"'{p}'" for p in candidates)
    raise SecretError(f"no secret found for the cluster at {host}:{port}: looked in --secret-file, "
                      f"${SECRET_FILE_ENV}, ${SECRET_ENV} and {looked} (a cluster writes that file while it "
                      f"serves REST on this machine; from elsewhere pass --secret-file)")


def _aliases(host: str) -> list[str]:
    """Other names of ``host``: the addresses it resolves to, and both loopback spellings."""
    names: list[str] = []
    try:
        for info in socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP):
            address = str(info[4][0])
            if address not in names:
                names.append(address)
    except (socket.gaierror, UnicodeError):
        pass
    if any(n in ("127.0.0.1", "::1") for n in names) or host == "localhost":
        names.extend(n for n in ("127.0.0.1", "localhost") if n not in names)
    return names
