"""Where checkpoint and savepoint files live: the local disk, or any file system fsspec knows.

A location is a plain path or a URL. Plain paths and ``file://`` URLs are the local disk,
written durably (:mod:`.files`: a temporary name, fsync, rename, fsync of the directory).
Any other scheme (``memory://``, ``s3://``, ``gs://``, ``hdfs://`` ...) goes through
`fsspec <https://filesystem-spec.readthedocs.io>`_ (imported only then, so ``import
streamkernel`` stays light): each file is written whole in one ``open(..., "wb")``, which
object stores make visible atomically when it closes; a checkpoint is still complete only
once its ``_metadata`` is written, last.

:func:`check_location` is what submission calls on each configured directory: it refuses,
naming the configuration key, a scheme fsspec does not know, a scheme whose implementation
package is not installed (fsspec's registry says which one), and a local "directory" that
is a regular file. Nothing is silently turned into a local folder named ``s3:``.
:func:`check_target_directory` checks more of a directory a person names for one savepoint
(through the REST API or the Python API): its length, its characters, and that it can be
created and written, before anything is triggered.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import posixpath
import shutil
from typing import Any, Union

from streamkernel.errors import CheckpointCorruptedError, IllegalConfigurationError
from streamkernel.runtime.checkpoint import files

__all__ = [
    "PathLike", "MAX_PATH_LENGTH", "scheme_of", "is_local", "normalize", "check_location", "check_target_directory",
    "join", "basename", "dirname",
    "makedirs", "listdir", "exists", "isdir", "rmtree", "remove", "remove_empty_dir", "move",
    "write_bytes", "write_pickle", "read_verified", "same_path",
]

PathLike = Union[str, "os.PathLike[str]"]
LOCAL_SCHEMES = ("file", "local")
"""Schemes that name the local disk (written durably)."""
MAX_PATH_LENGTH = 4096
"""The longest directory a person may name for a savepoint (characters): Linux's ``PATH_MAX``."""
_NAME_MAX = 255  # bytes of one name, where the file system does not say


def scheme_of(path: PathLike) -> str:
    """The URL scheme of ``path`` (lower case), ``"file"`` for a plain path."""
    text = os.fspath(path)
    return text.split("://", 1)[0].lower() if "://" in text else "file"


def is_local(path: PathLike) -> bool:
    """Whether ``path`` is on the local disk (a plain path or ``file://``)."""
    return scheme_of(path) in LOCAL_SCHEMES


def normalize(path: PathLike) -> str:
    """A local path made absolute (``file://`` and ``~`` resolved); a URL without a trailing slash."""
    text = os.fspath(path)
    if is_local(text):
        if "://" in text:
            text = text.split("://", 1)[1]
        return os.path.abspath(os.path.expanduser(text))
    return text.rstrip("/")


def check_location(path: PathLike, key: str, directory: bool = True) -> str:
    """``path`` normalized, once checked that checkpoints can be written there; ``key`` is the
    configuration key (or argument) it came from, named in the error.

    Raises IllegalConfigurationError for an unknown scheme, a scheme whose fsspec
    implementation is not installed, and (``directory``) a local path that is a regular file.
    """
    text = os.fspath(path)
    location = normalize(text)
    if is_local(location):
        if directory and os.path.exists(location) and not os.path.isdir(location):
            raise IllegalConfigurationError(
                f"{key}: {location} is a regular file, not a directory; checkpoints and savepoints need a "
                "directory there (remove the file or choose another path)")
        return location
    scheme = scheme_of(text)
    try:
        import fsspec  # type: ignore[import-untyped]
    except ImportError:
        raise IllegalConfigurationError(
            f"{key}: {text!r} needs fsspec for its {scheme}:// scheme, and fsspec is not installed "
            "(pip install fsspec)") from None
    from fsspec.registry import known_implementations  # type: ignore[import-untyped]

    try:
        fsspec.get_filesystem_class(scheme)
    except ImportError as error:
        hint = known_implementations.get(scheme, {}).get("err") or str(error)
        package = known_implementations.get(scheme, {}).get("class", "").split(".")[0]
        raise IllegalConfigurationError(
            f"{key}: {text!r} uses the {scheme}:// file system, whose implementation is not installed: {hint} "
            f"(package {package!r})") from None
    except ValueError:
        raise IllegalConfigurationError(
            f"{key}: {text!r} uses the scheme {scheme!r}, which fsspec does not know; use a local path, file://, "
            "memory:// or a scheme of an installed fsspec implementation (s3://, gs://, hdfs:// ...)") from None
    return location


def check_target_directory(path: PathLike, key: str) -> str:
    """``path`` normalized, once checked that a savepoint can be written there; ``key`` names
    the argument or request field it came from, and the error shows at most the first 100
    characters of ``path``.

    Beyond :func:`check_location` (a known and installed scheme, not a regular file): not
    empty, at most :data:`MAX_PATH_LENGTH` characters, no control character; on the local
    disk, no name longer than the file system allows (255 bytes) and the directory, or the
    nearest one above it that exists, a directory this process may write to (nothing is
    created). A remote file system is checked for its scheme only: only a write would prove
    the credentials. Raises IllegalConfigurationError saying what is wrong.
    """
    text = os.fspath(path)
    shown = _shown(text)
    if not text.strip():
        raise IllegalConfigurationError(f"{key}: the directory is empty; name the directory the savepoint goes to")
    if len(text) > MAX_PATH_LENGTH:
        raise IllegalConfigurationError(f"{key}: {shown} is longer than {MAX_PATH_LENGTH} characters (PATH_MAX); "
                                        "name a shorter directory")
    if any(ord(character) < 32 or ord(character) == 127 for character in text):
        raise IllegalConfigurationError(f"{key}: {shown} contains a control character (a newline, a NUL ...); "
                                        "name a directory without one")
    location = check_location(text, key)
    if is_local(location):
        _check_writable(location, key, shown)
    return location


def _check_writable(location: str, key: str, shown: str) -> None:
    """Refuse a local directory that cannot be created or written (see check_target_directory)."""
    existing = location
    while not os.path.lexists(existing):
        parent = os.path.dirname(existing)
        if parent == existing:
            break
        existing = parent
    try:
        name_max = os.pathconf(existing, "PC_NAME_MAX")
    except (OSError, ValueError):
        name_max = _NAME_MAX
    if any(len(os.fsencode(name)) > name_max for name in location.split(os.sep)):
        raise IllegalConfigurationError(f"{key}: {shown} has a name longer than {name_max} bytes, the most this "
                                        "file system allows; name a directory with shorter names")
    if not os.path.isdir(existing):
        raise IllegalConfigurationError(f"{key}: {shown} cannot be created: {_shown(existing)} is not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise IllegalConfigurationError(f"{key}: {shown} cannot be created or written: this process may not write "
                                        f"to {_shown(existing)}")


def _shown(text: str, limit: int = 100) -> str:
    """``text`` quoted, cut to ``limit`` characters (saying how long it was)."""
    return repr(text) if len(text) <= limit else f"{text[:limit]!r}... ({len(text)} characters)"


def _fs(path: str) -> tuple[Any, str]:
    from fsspec.core import url_to_fs  # type: ignore[import-untyped]

    return url_to_fs(path)


def join(base: str, *names: str) -> str:
    """``base``/``names`` (``os.path.join`` locally, ``/`` in a URL)."""
    return os.path.join(base, *names) if is_local(base) else posixpath.join(base, *names)


def basename(path: str) -> str:
    """The last part of ``path``."""
    return os.path.basename(path) if is_local(path) else posixpath.basename(path.rstrip("/"))


def dirname(path: str) -> str:
    """``path`` without its last part."""
    return os.path.dirname(path) if is_local(path) else posixpath.dirname(path.rstrip("/"))


def same_path(a: str, b: str) -> bool:
    """Whether two locations name the same file."""
    if is_local(a) or is_local(b):
        return is_local(a) and is_local(b) and normalize(a) == normalize(b)
    fs_a, path_a = _fs(a)
    fs_b, path_b = _fs(b)
    return type(fs_a) is type(fs_b) and path_a.rstrip("/") == path_b.rstrip("/")


def makedirs(path: str, exist_ok: bool = True) -> None:
    """Create directory ``path`` (and its parents)."""
    if is_local(path):
        os.makedirs(path, exist_ok=exist_ok)
        return
    fs, stripped = _fs(path)
    if not exist_ok and fs.exists(stripped):
        raise FileExistsError(path)
    fs.makedirs(stripped, exist_ok=True)


def listdir(path: str) -> list[str]:
    """The names in directory ``path`` ([] when it does not exist)."""
    if is_local(path):
        try:
            return os.listdir(path)
        except FileNotFoundError:
            return []
    fs, stripped = _fs(path)
    try:
        return [posixpath.basename(p.rstrip("/")) for p in fs.ls(stripped, detail=False)]
    except FileNotFoundError:
        return []


def exists(path: str) -> bool:
    """Whether a file or directory is at ``path``."""
    if is_local(path):
        return os.path.exists(path)
    fs, stripped = _fs(path)
    return bool(fs.exists(stripped))


def isdir(path: str) -> bool:
    """Whether ``path`` is a directory."""
    if is_local(path):
        return os.path.isdir(path)
    fs, stripped = _fs(path)
    return bool(fs.isdir(stripped))


def rmtree(path: str) -> None:
    """Delete directory ``path`` and everything below it (nothing there: nothing done)."""
    if is_local(path):
        shutil.rmtree(path, ignore_errors=True)
        return
    fs, stripped = _fs(path)
    try:
        fs.rm(stripped, recursive=True)
    except (FileNotFoundError, OSError):
        pass


def remove(path: str) -> None:
    """Delete file ``path``; raises OSError (FileNotFoundError) when that fails."""
    if is_local(path):
        os.unlink(path)
        return
    fs, stripped = _fs(path)
    fs.rm_file(stripped)


def remove_empty_dir(path: str) -> None:
    """Delete directory ``path`` if it is empty (silently keeps it otherwise)."""
    try:
        if is_local(path):
            os.rmdir(path)
        elif not listdir(path):
            rmtree(path)
    except OSError:
        pass


def move(source: str, target: str, size: int, sha256: str) -> None:
    """Move a state file (a savepoint takes its subtasks' files); across file systems it is
    copied, its content checked against ``size`` and ``sha256`` on the way."""
    if is_local(source) and is_local(target):
        try:
            os.replace(source, target)
            return
        except OSError:
            pass
    elif not is_local(source) and not is_local(target):
        fs_source, path_source = _fs(source)
        fs_target, path_target = _fs(target)
        if type(fs_source) is type(fs_target):
            fs_source.mv(path_source, path_target)
            return
    write_bytes(target, read_verified(source, size, sha256))
    try:
        remove(source)
    except OSError:
        pass


def write_bytes(path: str, data: bytes) -> tuple[int, str]:
    """Write ``data`` to ``path`` (durably and atomically on the local disk); returns (size, sha256)."""
    if is_local(path):
        return files.write_atomically(path, data)
    fs, stripped = _fs(path)
    with fs.open(stripped, "wb") as file:
        file.write(data)
    return len(data), hashlib.sha256(data).hexdigest()


def write_pickle(path: str, obj: Any) -> tuple[int, str]:
    """Pickle ``obj`` to ``path`` as :func:`write_bytes` writes; returns (size, sha256)."""
    if is_local(path):
        return files.pickle_atomically(path, obj)
    return write_bytes(path, pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))


def read_bytes(path: str) -> bytes:
    """The whole content of file ``path``."""
    if is_local(path):
        with open(path, "rb") as file:
            return file.read()
    fs, stripped = _fs(path)
    return bytes(fs.cat_file(stripped))


def read_verified(path: str, size: int, sha256: str) -> bytes:
    """The content of ``path`` if it has exactly ``size`` bytes and this SHA-256, else
    :class:`CheckpointCorruptedError` saying what differs."""
    if is_local(path):
        return files.read_verified(path, size, sha256)
    try:
        data = read_bytes(path)
    except FileNotFoundError:
        raise CheckpointCorruptedError(path, "the file is missing") from None
    except OSError as error:
        raise CheckpointCorruptedError(path, f"cannot be read: {error}") from None
    if len(data) != size:
        raise CheckpointCorruptedError(
            path, f"has {len(data)} bytes, the metadata says {size} (the file was truncated or rewritten)")
    if hashlib.sha256(data).hexdigest() != sha256:
        raise CheckpointCorruptedError(path, "its SHA-256 checksum does not match the metadata (the file was modified)")
    return data
