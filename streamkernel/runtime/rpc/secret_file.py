"""Cluster secret files: a hex secret in a file only its owner may read (as ssh insists for a key).

The RPC transport authenticates with the cluster secret; this module reads it from a file. It sits
with the transport so that every layer above (the REST clients' registry, a standalone cluster's
``DIR/cluster.secret``, a highly available cluster's shared secret) reads it the same way.

A secret file is refused, naming it and what is wrong, when it is a symbolic link, not a regular
file, owned by another user than the one reading it, or open to the group or others in any way
(mode bits beyond 0600). The checks are made on the file as opened (``O_NOFOLLOW``, then
``fstat`` of the descriptor), so nothing can swap the file between the check and the read.
:func:`write_private_file` writes one the same careful way: it never writes through a link.
"""

from __future__ import annotations

import errno
import os
import pwd
import stat
from pathlib import Path

from streamkernel.errors import StreamKernelError

__all__ = ["SecretError", "read_secret_file", "secret_from_hex", "write_private_file"]

#: More than any hex secret needs: a larger file holds no secret of ours.
_MAX_SECRET_FILE_BYTES = 4096


class SecretError(StreamKernelError):
    """No usable cluster secret: none found (naming where we looked), unreadable, a symbolic link,
    another user's file, or open to others."""


def read_secret_file(path: Path) -> bytes:
    """The secret in ``path``; SecretError (naming the file) when it is a symbolic link, not a regular
    file, not owned by this process's user, or accessible to the group or others (as ssh refuses such
    a key), or when it holds no hex secret."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.EMLINK) and os.path.islink(path):
            raise SecretError(f"'{path}' is a symbolic link: a cluster secret file must be a regular file, not a "
                              f"link (a link lets whoever can change it choose the secret); replace it by the "
                              f"file itself") from None
        raise SecretError(f"cannot read the cluster secret file '{path}': {error.strerror or error}") from None
    try:
        info = os.fstat(fd)
        _check_private(path, info)
        data = os.read(fd, _MAX_SECRET_FILE_BYTES + 1)
    except OSError as error:
        raise SecretError(f"cannot read the cluster secret file '{path}': {error.strerror or error}") from None
    finally:
        os.close(fd)
    if len(data) > _MAX_SECRET_FILE_BYTES:
        data = b""
    return secret_from_hex(data.decode("ascii", errors="replace"), f"the cluster secret file '{path}'")


def _check_private(path: Path, info: os.stat_result) -> None:
    """SecretError unless the opened file ``info`` describes is a regular file of ours, mode 0600 or less."""
    if not stat.S_ISREG(info.st_mode):
        raise SecretError(f"'{path}' is not a regular file: a cluster secret must be a regular file")
    if info.st_uid != os.geteuid():
        me = os.geteuid()
        raise SecretError(f"'{path}' is owned by {_user(info.st_uid)}, not by {_user(me)}: a cluster secret file "
                          f"must belong to the user who reads it, as ssh insists for a key (chown {_name(me)} "
                          f"'{path}' if it is yours)")
    if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise SecretError(f"Permissions {stat.S_IMODE(info.st_mode):04o} for '{path}' are too open: a cluster secret "
                          f"must be readable by its owner only (chmod 600 '{path}')")


def _name(uid: int) -> str:
    """The user name of ``uid``, or the number for a uid without a name (a container)."""
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _user(uid: int) -> str:
    """``name (uid N)``, or ``uid N`` for a uid without a name."""
    name = _name(uid)
    return f"{name} (uid {uid})" if name != str(uid) else f"uid {uid}"


def write_private_file(path: Path, data: bytes) -> None:
    """Replace ``path`` by a new file of mode 0600 holding ``data``: written under a temporary name next
    to it (created exclusively, never through a symbolic link), synced, then renamed over ``path`` (a
    symbolic link there is replaced, not written through). A reader never sees a half-written file."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        temporary.unlink()  # a leftover of a process with our pid that died
    except FileNotFoundError:
        pass
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        try:
            os.fchmod(fd, 0o600)  # whatever the umask
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, path)
    except BaseException:
        try:
            temporary.unlink()
        except FileNotFoundError:
            pass
        raise


def secret_from_hex(text: str, where: str) -> bytes:
    """The secret written as hex in ``text`` (SecretError naming ``where`` when it is not one)."""
    try:
        secret = bytes.fromhex(text.strip())
    except ValueError:
        secret = b""
    if len(secret) < 16:
        raise SecretError(f"{where} holds no cluster secret (expected at least 32 hex digits)")
    return secret
