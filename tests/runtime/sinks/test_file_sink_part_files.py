"""Part file names of the FileSink (Flink 2.x) and the clean-up a restore does, and the
FileSource's hidden-file rule (Flink's DefaultFileFilter) for paths given explicitly."""

from __future__ import annotations

import pathlib
import re

import operator_harness as harness  # tests/runtime/operator_harness.py (on sys.path: conftest.py)
import pytest

from streamkernel.common.serialization import Encoder
from streamkernel.datastream.connectors import FileSink
from streamkernel.errors import InvalidProgramError
from streamkernel.graph.operator_specs import SinkSpec
from streamkernel.runtime.sinks.part_files import (
    UUID_PATTERN,
    PartFileNames,
    bucket_uuid,
    derived_seed,
    in_progress_path,
    remove_written_after,
)
from streamkernel.runtime.sources.files import list_files


def test_bucket_uuids_are_version_4_uuids_derived_from_the_seed() -> None:
    ids = [bucket_uuid("seed", k) for k in range(3)]
    assert all(re.fullmatch(UUID_PATTERN, i) and i[14] == "4" and i[19] in "89ab" for i in ids), ids
    assert len(set(ids)) == 3 and ids == [bucket_uuid("seed", k) for k in range(3)]
    assert bucket_uuid("other", 0) != ids[0]
    assert derived_seed("a", 1, 3) == derived_seed("a", 1, 3) != derived_seed("a", 2, 3)


def test_names_and_in_progress_paths(tmp_path: pathlib.Path) -> None:
    names = PartFileNames("data", ".txt")
    final = str(tmp_path / names.name(bucket_uuid("s", 0), 2))
    in_progress = in_progress_path(final)
    assert re.fullmatch(rf"data-{UUID_PATTERN}-2\.txt", pathlib.Path(final).name)
    assert re.fullmatch(rf"\.data-{UUID_PATTERN}-2\.txt\.inprogress\.{UUID_PATTERN}", pathlib.Path(in_progress).name)
    for path in (final, in_progress, str(tmp_path / "data-notauuid-1.txt"), str(tmp_path / "other.txt")):
        pathlib.Path(path).write_text("x")
    assert sorted(names.scan(str(tmp_path))) == sorted([(final, bucket_uuid("s", 0), 2),
                                                         (in_progress, bucket_uuid("s", 0), 2)])


def test_remove_written_after_keeps_what_the_checkpoint_covers(tmp_path: pathlib.Path) -> None:
    names = PartFileNames("part", "")
    old, later, foreign = bucket_uuid("seed", 0), bucket_uuid("seed", 1), bucket_uuid("someone else", 0)
    for uid, counter in [(old, 0), (old, 1), (old, 2), (later, 0), (foreign, 5)]:
        (tmp_path / names.name(uid, counter)).write_text("x")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / pathlib.Path(in_progress_path(names.name(later, 1))).name).write_text("x")
    # the checkpoint: bucket 0 at counter 2, the next bucket is number 1
    removed = remove_written_after(str(tmp_path), names, {old: 2}, [("seed", 1)])
    assert len(removed) == 3
    left = sorted(p.name for p in tmp_path.rglob("*") if p.is_file())
    assert left == sorted([names.name(old, 0), names.name(old, 1), names.name(foreign, 5)])


def test_file_source_skips_hidden_files_and_directories_also_when_given(tmp_path: pathlib.Path) -> None:
    """Flink's enumerators apply the DefaultFileFilter to the given paths themselves too."""
    for rel in ["a", ".b", "_c", "d/e", "_f/g", ".h/i"]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x\n")
    given = tuple(str(tmp_path / p) for p in (".", ".b", "_c", "_f", ".h", "d/e"))
    assert list_files(given) == [str(tmp_path / "a"), str(tmp_path / "d" / "e")]


def test_a_checkpoint_of_the_subtask_index_naming_is_refused_clearly(tmp_path: pathlib.Path) -> None:
    sink = FileSink.for_row_format(str(tmp_path), Encoder.simple_string_encoder()).build()
    old_state = {"writer": {"pending": [], "in_progress": [], "counter": 3}}
    with pytest.raises(InvalidProgramError, match=r"FileSink .*named part files by subtask index"):
        harness.OperatorHarness(SinkSpec(sink=sink), name="Sink: files",
                                configuration={"execution.checkpointing.interval": "1 s"},
                                restored_state=old_state)
