"""Cluster secret files: a hex secret in a file only its owner may read (as ssh insists for a key).

The RPC transport authenticates with the cluster secret; this module reads it from a file. It sits
with the transport so that every layer above (the REST clients' registry, a highly available
cluster's shared secret) reads it the same way.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from streamkernel.errors import StreamKernelError

__all__ = ["SecretError", "read_secret_file", "secret_from_hex"]


class SecretError(StreamKernelError):
    """No usable cluster secret: none found (naming where we looked), unreadable, or readable by others."""


def read_secret_file(path: Path) -> bytes:
    """The secret in ``path``; SecretError when others may read the file (as ssh refuses such a key)
    or when it holds no hex secret."""
    try:
        mode = os.stat(path).st_mode
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise SecretError(f"Permissions {stat.S_IMODE(mode):04o} for '{path}' are too open: a cluster secret "
                              f"must be readable by its owner only (chmod 600 '{path}')")
        text = Path(path).read_text(encoding="ascii", errors="replace").strip()
    except OSError as error:
        raise SecretError(f"cannot read the cluster secret file '{path}': {error.strerror or error}") from None
    return secret_from_hex(text, f"the cluster secret file '{path}'")


def secret_from_hex(text: str, where: str) -> bytes:
    """The secret written as hex in ``text`` (SecretError naming ``where`` when it is not one)."""
    try:
        secret = bytes.fromhex(text.strip())
    except ValueError:
        secret = b""
    if len(secret) < 16:
        raise SecretError(f"{where} holds no cluster secret (expected at least 32 hex digits)")
    return secret
