"""Names of a FileSink's part files, as Flink 2.x gives them, and the clean-up of a restore.

A part file is ``<prefix>-<bucket uuid>-<counter><suffix>`` (Flink's ``FileWriterBucket``):
each bucket a writer opens gets a random UUID and counts its part files from 0. While
written, the file is the hidden ``.<name>.inprogress.<another uuid>`` (Flink's local
recoverable writer), renamed to ``<name>`` when committed.

The UUIDs look random (version 4) but a writer derives them from a random *seed* and the
bucket's sequence number (``bucket_uuid(seed, k)``), and its checkpoint stores the seed
and the next sequence number. So a restored writer can find what the failed attempt wrote
after the checkpoint, which the sources replay: the files of the buckets it opened after
it (sequence numbers from the checkpointed one on) and the later part files of the buckets
open at the checkpoint (counters from the checkpointed ones on), even those committed at
that attempt's end of input (:func:`remove_written_after`).
"""

from __future__ import annotations

import hashlib
import os
import re
import uuid
from typing import Iterable

__all__ = ["UUID_PATTERN", "PartFileNames", "bucket_uuid", "new_seed", "derived_seed", "in_progress_path",
           "remove_written_after"]

#: a UUID as Java's ``UUID.toString()`` writes it
UUID_PATTERN = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


def new_seed() -> str:
    """A fresh random seed for a writer's bucket UUIDs."""
    return uuid.uuid4().hex


def derived_seed(*parts: object) -> str:
    """A seed that the same restore computes again (a new subtask of a rescaled job)."""
    return hashlib.blake2b("/".join(map(str, parts)).encode(), digest_size=16).hexdigest()


def bucket_uuid(seed: str, k: int) -> str:
    """The UUID of the ``k``-th bucket a writer with ``seed`` opens (a version 4 UUID)."""
    digest = hashlib.blake2b(f"{seed}/{k}".encode(), digest_size=16).digest()
    return str(uuid.UUID(bytes=digest, version=4))


def in_progress_path(final: str) -> str:
    """The hidden in-progress file of the part file ``final``."""
    directory, name = os.path.split(final)
    return os.path.join(directory, f".{name}.inprogress.{uuid.uuid4()}")


class PartFileNames:
    """Builds and recognizes part file names of one ``OutputFileConfig``."""

    def __init__(self, prefix: str, suffix: str) -> None:
        self.prefix, self.suffix = prefix, suffix
        self._pattern = re.compile(rf"^\.?{re.escape(prefix)}-({UUID_PATTERN})-(\d+){re.escape(suffix)}"
                                   rf"(\.inprogress\.{UUID_PATTERN})?$")

    def name(self, bucket_id: str, counter: int) -> str:
        """The final name of part ``counter`` of the bucket with UUID ``bucket_id``."""
        return f"{self.prefix}-{bucket_id}-{counter}{self.suffix}"

    def scan(self, base: str) -> list[tuple[str, str, int]]:
        """(path, bucket uuid, counter) of every part file under ``base``, committed or not."""
        found = []
        for root, _dirs, files in os.walk(base):
            for name in files:
                match = self._pattern.match(name)
                if match:
                    found.append((os.path.join(root, name), match.group(1), int(match.group(2))))
        return found


def remove_written_after(base: str, names: PartFileNames, counters: dict[str, int],
                         sequences: Iterable[tuple[str, int]]) -> list[str]:
    """Remove the part files written after a checkpoint; the paths removed.

    ``counters``: bucket uuid -> the bucket's part counter at the checkpoint (its parts from
    there on came later); ``sequences``: (seed, next bucket number) of each writer restored
    (its buckets from that number on were opened later).
    """
    files = names.scan(base)
    seen = {bucket for _, bucket, _ in files}
    later: set[str] = set()
    for seed, first in sequences:
        # the buckets opened after the checkpoint are numbered first, first + 1, ...: each
        # wrote a file, so there are no more of them than the distinct uuids on disk
        later.update(bucket_uuid(seed, k) for k in range(first, first + len(seen)))
    removed = []
    for path, bucket, counter in files:
        if bucket in later or counter >= counters.get(bucket, counter + 1):
            os.remove(path)
            removed.append(path)
    return removed
