"""Cluster secret files (issue 29, item 9): refused, as ssh refuses a key, when they are a symbolic
link, another user's file or open to others; and written without following a link."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import pytest

from streamkernel.runtime.entrypoint.cluster_dir import ClusterDir
from streamkernel.runtime.highavailability.cluster_secret import read_ha_secret
from streamkernel.runtime.rest.cluster_secret import HOME_ENV, SECRET_ENV, SECRET_FILE_ENV, find_secret, secret_path
from streamkernel.runtime.rpc.secret_file import SecretError, read_secret_file

SECRET = bytes(range(32))
NOBODY = 65534


@pytest.fixture
def secret_file(tmp_path: Path) -> Path:
    """A good secret file: mode 0600, ours."""
    path = tmp_path / "cluster.secret"
    path.write_text(SECRET.hex() + "\n")
    path.chmod(0o600)
    return path


def test_a_private_regular_file_of_ours_is_read(secret_file: Path) -> None:
    assert stat.S_IMODE(secret_file.stat().st_mode) == 0o600
    assert read_secret_file(secret_file) == SECRET


def test_a_symbolic_link_is_refused_even_to_a_good_secret_file(secret_file: Path, tmp_path: Path) -> None:
    link = tmp_path / "linked.secret"
    link.symlink_to(secret_file)
    with pytest.raises(SecretError) as refused:
        read_secret_file(link)
    assert str(refused.value).startswith(f"'{link}' is a symbolic link: a cluster secret file must be a regular file")
    assert "\n" not in str(refused.value)


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_another_users_file_is_refused(secret_file: Path) -> None:
    os.chown(secret_file, NOBODY, -1)
    with pytest.raises(SecretError, match=re.escape(f"'{secret_file}' is owned by ") + r"(nobody \()?uid 65534\)?, "
                                          r"not by .*uid 0.*: a cluster secret file must belong to the user who "
                                          r"reads it"):
        read_secret_file(secret_file)


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o620, 0o602, 0o610])
def test_any_access_for_the_group_or_others_is_refused(secret_file: Path, mode: int) -> None:
    secret_file.chmod(mode)
    with pytest.raises(SecretError, match=re.escape(f"Permissions {mode:04o} for '{secret_file}' are too open")):
        read_secret_file(secret_file)


def test_something_else_than_a_regular_file_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.secret"
    os.mkfifo(fifo, 0o600)  # opening a FIFO to read would wait for a writer
    with pytest.raises(SecretError, match=re.escape(f"'{fifo}' is not a regular file")):
        read_secret_file(fifo)


def test_every_reader_refuses_a_link(secret_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The standalone cluster's DIR/cluster.secret, the user's registry and a HA cluster's shared secret."""
    directory = ClusterDir(str(tmp_path / "cluster"))
    directory.prepare()
    directory.secret_file.symlink_to(secret_file)
    with pytest.raises(SecretError, match="is a symbolic link"):
        directory.read_secret()

    for name in (SECRET_ENV, SECRET_FILE_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(HOME_ENV, str(tmp_path / "home"))
    registered = secret_path("127.0.0.1", 8081)
    registered.parent.mkdir(parents=True)
    registered.symlink_to(secret_file)
    with pytest.raises(SecretError, match="is a symbolic link"):
        find_secret("127.0.0.1", 8081)

    storage = tmp_path / "ha"
    (storage / "prod").mkdir(parents=True)
    (storage / "prod" / "cluster.secret").symlink_to(secret_file)
    with pytest.raises(SecretError, match="is a symbolic link"):
        read_ha_secret({"high-availability.type": "zookeeper", "high-availability.storageDir": str(storage),
                        "high-availability.cluster-id": "/prod"})


def test_a_new_secret_replaces_a_link_instead_of_writing_through_it(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's own file\n")
    directory = ClusterDir(str(tmp_path / "cluster"))
    directory.prepare()
    directory.secret_file.symlink_to(victim)
    secret = directory.new_secret()
    assert victim.read_text() == "the user's own file\n"
    assert not directory.secret_file.is_symlink()
    assert directory.read_secret() == secret
    assert [p.name for p in directory.path.iterdir() if p.name.startswith(".")] == []  # no temporary left
