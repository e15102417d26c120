"""FileSink and FileSource as in Flink 2.x: part file names, buckets, rolling, hidden files.

``programs/files_sink_source.py`` writes 30 records with FileSinks at parallelism 2 and
lists every file produced (hidden ones too), then reads them back with a FileSource. The
expectations follow Flink 2.x (FileWriterBucket, DefaultRollingPolicy, DateTimeBucketAssigner,
DefaultFileFilter), computed here from the program's data; how records are spread over the
two subtasks is not defined (Flink's rebalance starts at a random channel), so the checks
hold for any spread.
"""

from __future__ import annotations

import collections
import datetime
import re
import time

from tests.compat.test_pyflink_programs import load, run, sections

UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
LINE_BYTES = len("rec-00\n")


def listed_files(lines: list[str]) -> list[tuple[str, list[str]]]:
    """(relative path, lines) of each ``FILE`` line."""
    out = []
    for line in lines:
        _, path, *content = line.split(" ")
        out.append((path, content[0].split(",") if content and content[0] else []))
    return out


def by_bucket_uuid(files: list[tuple[str, list[str]]], pattern: str) -> dict[str, dict[int, list[str]]]:
    """uuid -> counter -> lines, asserting every name matches ``pattern`` (groups: uuid, counter)."""
    out: dict[str, dict[int, list[str]]] = collections.defaultdict(dict)
    for path, lines in files:
        match = re.fullmatch(pattern, path)
        assert match, f"{path!r} does not match {pattern!r}"
        out[match.group(1)][int(match.group(2))] = lines
    return out


def test_file_sink_names_rolling_and_file_source_read_back(tmp_path):
    program = load("files_sink_source.py")
    records = program.RECORDS
    hours_before = datetime.datetime.fromtimestamp(time.time()).strftime("%Y-%m-%d--%H")
    out = sections(run("files_sink_source.py", str(tmp_path)), r"DIR (\w+)")
    hours = {hours_before, datetime.datetime.fromtimestamp(time.time()).strftime("%Y-%m-%d--%H")}

    # default DateTimeBucketAssigner: an hourly sub-directory in the local time zone; names
    # part-<uuid>-<counter>, one random UUID per subtask's bucket, counters from 0; no file left hidden
    dated = by_bucket_uuid(listed_files(out["dated"]), rf"(?:{'|'.join(hours)})/part-({UUID})-(\d+)")
    assert len(dated) == 2, dated  # two subtasks, each with its own bucket UUID
    assert all(sorted(parts) == [0] for parts in dated.values())  # 128 MiB part size: no roll
    assert sorted(line for parts in dated.values() for lines in parts.values() for line in lines) == records

    # OutputFileConfig prefix and suffix; DefaultRollingPolicy rolls before a record once the
    # file holds more than part_size bytes: 21 bytes = 3 lines is not more, so 4 lines a file
    named = by_bucket_uuid(listed_files(out["named"]), rf"out-({UUID})-(\d+)\.txt")
    assert len(named) == 2
    per_file = program.PART_SIZE // LINE_BYTES + 1
    for parts in named.values():
        assert sorted(parts) == list(range(len(parts)))  # 0, 1, 2, ... per bucket
        sizes = [len(parts[n]) for n in sorted(parts)]
        assert all(size == per_file for size in sizes[:-1]) and 1 <= sizes[-1] <= per_file, sizes
    assert sorted(line for parts in named.values() for lines in parts.values() for line in lines) == records

    # with checkpointing, a bounded job commits at its end of input (no checkpoint was taken)
    for name in ("checkpointed", "on_checkpoint"):
        files = by_bucket_uuid(listed_files(out[name]), rf"part-({UUID})-(\d+)")
        assert len(files) == 2 and all(sorted(parts) == [0] for parts in files.values()), name
        assert sorted(line for parts in files.values() for line in parts[0]) == records, name
    assert set(dated).isdisjoint(named) and len({*dated, *named}) == 4  # random UUIDs

    # FileSource: directories recursively, hidden (. or _) files and directories skipped, also
    # when given as paths; text lines without their terminators (\n, \r\n, or none at the end)
    visible = ["a1", "a2", "z1", "z2", "b"]
    assert sorted(line.removeprefix("READ ") for line in out["read"]) == sorted(records * 2 + visible)
