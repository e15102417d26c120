"""Writing and reading checkpoint files so that a crash never leaves a half-written file in place.

Every file is written to a temporary name in its final directory, flushed and fsynced,
then renamed over its final name (``os.replace`` is atomic on POSIX and Windows), and the
directory is fsynced so the rename itself survives a power loss. A reader therefore sees
either nothing or the whole file; what it sees is still checked against the size and
SHA-256 recorded in the checkpoint's metadata, which catches truncation and tampering.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import uuid
from typing import Any, BinaryIO, Callable

from streamkernel.errors import CheckpointCorruptedError

__all__ = ["write_atomically", "pickle_atomically", "file_sha256", "read_verified", "fsync_directory"]

_CHUNK = 1 << 20


class _HashingWriter:
    """A file wrapper that hashes and counts what is written through it."""

    def __init__(self, file: BinaryIO) -> None:
        self._file = file
        self.sha256 = hashlib.sha256()
        self.size = 0

    def write(self, data: Any) -> int:
        view = memoryview(data)
        self._file.write(view)
        self.sha256.update(view)
        self.size += view.nbytes
        return view.nbytes


def fsync_directory(directory: str) -> None:
    """Make a rename in ``directory`` durable (a no-op where directories cannot be opened)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # Windows: directories cannot be opened; renames are durable enough there
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _write(path: str, produce: Callable[[_HashingWriter], object]) -> tuple[int, str]:
    directory = os.path.dirname(os.path.abspath(path))
    temp = os.path.join(directory, f".{os.path.basename(path)}.{uuid.uuid4().hex}.inprogress")
    try:
        with open(temp, "wb") as file:
            writer = _HashingWriter(file)
            produce(writer)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temp, path)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise
    fsync_directory(directory)
    return writer.size, writer.sha256.hexdigest()


def write_atomically(path: str, data: bytes) -> tuple[int, str]:
    """Write ``data`` to ``path`` atomically; returns (size, sha256 hex digest)."""
    return _write(path, lambda writer: writer.write(data))


def pickle_atomically(path: str, obj: Any) -> tuple[int, str]:
    """Pickle ``obj`` to ``path`` atomically, hashing while writing; returns (size, sha256)."""
    return _write(path, lambda writer: pickle.dump(obj, writer, protocol=pickle.HIGHEST_PROTOCOL))


def file_sha256(path: str) -> str:
    """The SHA-256 hex digest of a file's content, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for chunk in iter(lambda: file.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def read_verified(path: str, size: int, sha256: str) -> bytes:
    """The content of ``path`` if it has exactly ``size`` bytes and this SHA-256, else
    :class:`CheckpointCorruptedError` saying what differs."""
    try:
        actual_size = os.path.getsize(path)
    except FileNotFoundError:
        raise CheckpointCorruptedError(path, "the file is missing") from None
    except OSError as error:
        raise CheckpointCorruptedError(path, f"cannot be read: {error}") from None
    if actual_size != size:
        raise CheckpointCorruptedError(
            path, f"has {actual_size} bytes, the metadata says {size} (the file was truncated or rewritten)")
    try:
        with open(path, "rb") as file:
            data = file.read()
    except OSError as error:
        raise CheckpointCorruptedError(path, f"cannot be read: {error}") from None
    if hashlib.sha256(data).hexdigest() != sha256:
        raise CheckpointCorruptedError(path, "its SHA-256 checksum does not match the metadata (the file was modified)")
    return data
