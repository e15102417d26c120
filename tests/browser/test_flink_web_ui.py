"""Flink 2.3's own Web UI against streamkernel's REST endpoint, in a real (headless) Chromium.

A cluster of 2 TaskManagers x 2 slots serves the dashboard from Flink's ``flink-dist-2.3.0.jar``
(installed by ``scripts/ensure_flink_tools.sh``, as ``make test`` does) and runs an unbounded
job at parallelism 2 with a keyed stage, checkpointing every 200 ms. Once a checkpoint
completed, the test opens ``rest_url`` and asserts what each page shows: Overview (TaskManagers,
slots, the job's application RUNNING), the job's graph and vertex names, a completed checkpoint
count > 0, the TaskManagers list, and a configured key on the JobManager's configuration page.
Every console error is collected; a TypeError (or any uncaught error) from the app fails the
test, as does any API call answered with an error status. Screenshots go to ``out/webui/``.

Needs Chromium, playwright (test extras) and Flink's jars; skipped, saying which is missing, otherwise.
"""

from __future__ import annotations

import importlib.util
import json
import pathlib
import re
import urllib.request
from typing import Any, Iterator

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "out" / "webui"
TIMEOUT_MS = 30_000


def _load(name: str, path: pathlib.Path) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


lab_server = _load("lab_server", pathlib.Path(__file__).with_name("lab_server.py"))
flink_tools = _load("flink_tools", REPO / "tests" / "flink_tools.py")


class RunningJob:
    """The cluster serving the dashboard, and its running job's id."""

    def __init__(self, cluster: Any, job_id: str) -> None:
        self.cluster = cluster
        self.job_id = job_id
        self.url: str = cluster.rest_url


@pytest.fixture
def running_job(tmp_path: pathlib.Path) -> Iterator[RunningJob]:
    from streamkernel.common import WatermarkStrategy
    from streamkernel.common.job_status import JobStatus
    from streamkernel.datastream.connectors import DataGeneratorSource
    from streamkernel.datastream.stream_execution_environment import StreamExecutionEnvironment
    from streamkernel.runtime.minicluster.minicluster import MiniCluster, set_current_cluster
    from streamkernel.testing.waiting import wait_until

    jar = flink_tools.flink_home() / "lib" / f"flink-dist-{flink_tools.FLINK_VERSION}.jar"  # skips without it
    cluster = MiniCluster(2, 2, backend="local", configuration={
        "rest.port": "0", "web.dashboard.jar": str(jar), "web.refresh-interval": "1000"}).start(make_current=False)
    try:
        set_current_cluster(cluster)
        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(2)
        env.enable_checkpointing(200)
        env.get_checkpoint_config().set_checkpoint_storage_dir(str(tmp_path / "checkpoints"))
        words = env.from_source(DataGeneratorSource(lambda i: ("w%d" % (i % 7), 1), None, 200.0),
                                WatermarkStrategy.no_watermarks(), "words")
        words.key_by(lambda p: p[0]).reduce(lambda a, b: (a[0], a[1] + b[1])).name("Counts") \
            .add_sink(lambda x: None).name("Discard")
        job_id = str(env.execute_async("web ui job").get_job_id())
        set_current_cluster(None)

        def checkpointed() -> bool:
            details = cluster.dispatcher.request_job_details(job_id)
            return (details.status is JobStatus.RUNNING and details.checkpoints is not None
                    and details.checkpoints.num_completed > 0)

        wait_until(checkpointed, message="a completed checkpoint of the running job")
        yield RunningJob(cluster, job_id)
    finally:
        set_current_cluster(None)
        cluster.stop()


@pytest.fixture
def browser() -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api", reason="the browser test needs playwright (test extras)")
    chromium = lab_server.chromium_path()
    if chromium is None:
        pytest.skip("no Chromium on this machine (apt-get install chromium; make test installs it when root)")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            yield launched
        finally:
            launched.close()


class Console:
    """What the page reported: console errors, uncaught errors, API calls answered with >= 400."""

    def __init__(self, page: Any, base_url: str) -> None:
        self.errors: list[str] = []
        self.uncaught: list[str] = []
        self.failed_calls: list[str] = []
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: self.uncaught.append(f"{e.name}: {e.message}"))
        page.on("response", lambda r: self.failed_calls.append(f"{r.status} {r.url[len(base_url):]}")
                if r.status >= 400 and r.url.startswith(base_url) else None)

    def check(self) -> None:
        """Fail on a TypeError from the app's bundle, an uncaught error, or an API call that failed."""
        type_errors = [e for e in self.errors + self.uncaught if "TypeError" in e]
        assert not type_errors, f"the dashboard's code failed: {type_errors}"
        assert not self.uncaught, f"uncaught errors in the dashboard: {self.uncaught}"
        assert not self.failed_calls, f"API calls the endpoint refused: {self.failed_calls}"


def _row(page: Any, table_text: str, *texts: str) -> Any:
    """The first table row containing every text (waited for)."""
    row = page.locator("tr", has_text=table_text)
    for text in texts:
        row = row.filter(has_text=text)
    row.first.wait_for(timeout=TIMEOUT_MS)
    return row.first


def _shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def test_flinks_dashboard_shows_the_cluster_the_job_its_checkpoints_and_the_configuration(
        browser: Any, running_job: RunningJob) -> None:
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(TIMEOUT_MS)
    console = Console(page, running_job.url)
    url, jid = running_job.url, running_job.job_id

    # Overview: TaskManagers and slots, the job's application RUNNING
    page.goto(url + "/#/overview")
    slots = page.locator("nz-card", has_text="Available Task Slots")
    slots.get_by_text(re.compile(r"Total Task Slots\s*4")).wait_for()
    slots.get_by_text(re.compile(r"Task Managers\s*2")).wait_for()
    _row(page, "SingleJobApplication(web ui job)", "RUNNING")
    _shot(page, "overview")

    # the running jobs' list names the job RUNNING
    page.goto(url + "/#/job/running")
    _row(page, "web ui job", "RUNNING")

    # the job: its graph's vertices by name
    page.goto(f"{url}/#/job/running/{jid}/overview")
    for name in ("Source: words", "Counts -> Sink: Discard"):
        page.locator("flink-dagre").get_by_text(name, exact=True).wait_for()
        _row(page, name, "RUNNING")
    _shot(page, "job")

    # a vertex's tabs, each with what it reads (subtasks, TaskManagers, watermarks, accumulators ...)
    with urllib.request.urlopen(f"{url}/jobs/{jid}", timeout=30) as response:
        vertex = json.load(response)["vertices"][1]["id"]
    for tab, text in (("detail", "Counts -> Sink: Discard"), ("subtasks", "taskmanager-"),
                      ("taskmanagers", "taskmanager-"), ("watermarks", "No Watermark"),
                      ("accumulators", "Vertex Accumulators"), ("backpressure", "Backpressure Status"),
                      ("metrics", "Add metric")):
        page.goto(f"{url}/#/job/running/{jid}/overview/{vertex}/{tab}")
        page.locator("flink-job-overview-drawer").get_by_text(text).first.wait_for()
    _shot(page, "vertex")

    # checkpoints: completed > 0
    page.goto(f"{url}/#/job/running/{jid}/checkpoints")
    page.locator("tr", has_text=re.compile(r"Completed:\s*[1-9]")).first.wait_for()
    _shot(page, "checkpoints")

    # exceptions and the job's configuration load without errors
    page.goto(f"{url}/#/job/running/{jid}/exceptions")
    page.get_by_text("Exception History").first.wait_for()
    page.goto(f"{url}/#/job/running/{jid}/configuration")
    page.get_by_text("Execution Configuration").first.wait_for()

    # TaskManagers: both listed with their slots
    page.goto(url + "/#/task-manager")
    for tm in ("taskmanager-1", "taskmanager-2"):
        _row(page, f"streamkernel://{tm}")
    _shot(page, "taskmanagers")
    page.goto(url + "/#/task-manager/taskmanager-1/metrics")
    page.get_by_text("Allocated slots").first.wait_for()

    # JobManager: the configuration shows the key set on the cluster; the environment loads
    page.goto(url + "/#/job-manager/config")
    _row(page, "web.refresh-interval", "1000")
    _shot(page, "jobmanager-config")
    page.goto(url + "/#/job-manager/metrics")
    page.get_by_text("JVM (Heap/Non-Heap) Memory").first.wait_for()
    page.goto(url + "/#/job-manager/thread-dump")
    # the editor shows the first threads' headers ("name" Id=...) and stacks (it renders only the visible lines)
    page.locator(".view-lines", has_text=re.compile(r"Id=\d+")).first.wait_for()

    console.check()
