"""streamkernel's REST answers against a real Flink 2.3's, resource by resource.

``flink_rest_answers.json`` holds what a real Flink 2.3 session cluster answered for a job of
the same shape (``scripts/record_flink_rest_answers.py`` records it; ``rest_shaped_job.py``
runs ours): each GET resource's status, the key paths and JSON types of its answer, and the
metric ids of the metric resources. One cluster runs our job; every resource Flink answered
200 must answer 200 here with every key path of Flink's answer, each with a type Flink's had
there, and every metric id Flink listed, except the deliberate differences docs/rest-api.md
lists with their reasons (``rest_differences.py`` reads them). No JVM is started: the recording
is the oracle.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import pytest
from rest_differences import DIFFERENCES  # tests/runtime/ is on sys.path
from rest_shaped_job import OPERATOR_GROUPS, shaped_job
from rest_shapes import compare_shapes
from rest_walk import walk

FIXTURE = Path(__file__).with_name("flink_rest_answers.json")
RECORDED: dict[str, Any] = json.loads(FIXTURE.read_text(encoding="utf-8"))
ANSWERED = sorted(key for key, entry in RECORDED["resources"].items() if entry["status"] == 200)


@pytest.fixture(scope="module")
def ours() -> Iterator[dict[str, dict]]:
    """Our answers, walked as the recording walked Flink's."""
    templates = sorted({key.split(" [")[0] for key in RECORDED["resources"]})
    with shaped_job() as (cluster, job_id):
        assert cluster.rest_url is not None
        yield walk(cluster.rest_url, job_id, templates, OPERATOR_GROUPS)


def problems(flink: dict, ours: dict) -> list[tuple[str, str]]:
    """(what, how) our answer differs from Flink's: ``what`` is ``status``, ``shape:<path>``,
    ``values:<path>`` (a metric resource's answer with values) or ``metric:<id>``."""
    if ours.get("status") != 200:
        return [("status", f"answered {ours.get('status')} where Flink answered 200")]
    found = [(f"shape:{path}", how) for path, how in compare_shapes(flink["shape"], ours["shape"])]
    found += [(f"values:{path}", how) for path, how in compare_shapes(flink.get("values_shape", {}),
                                                                      ours.get("values_shape", {}))]
    found += [(f"metric:{metric}", "missing") for metric in sorted(set(flink.get("metric_ids", ()))
                                                                  - set(ours.get("metric_ids", ())))]
    return found


def _excused(resource: str, what: str) -> bool:
    return any(d.matches(resource, what) for d in DIFFERENCES)


@pytest.mark.parametrize("resource", ANSWERED)
def test_resource_answers_as_flink(ours: dict[str, dict], resource: str) -> None:
    found = problems(RECORDED["resources"][resource], ours.get(resource, {"status": "nothing (not walked)"}))
    unexcused = [f"{what}: {how}" for what, how in found if not _excused(resource, what)]
    assert not unexcused, f"{resource} differs from Flink 2.3's answer:\n  " + "\n  ".join(unexcused)


def test_every_documented_difference_is_still_one(ours: dict[str, dict]) -> None:
    """An entry of docs/rest-api.md's table marked *always* that excuses nothing is stale: remove it."""
    used = set()
    for resource in ANSWERED:
        for what, _ in problems(RECORDED["resources"][resource], ours.get(resource, {"status": None})):
            used.update(d for d in DIFFERENCES if d.matches(resource, what))
    stale = [d for d in DIFFERENCES if d.always and d not in used]
    assert not stale, f"documented differences that no longer differ: {stale}"
