"""The cockpit as a person sees it: JupyterLab in a real (headless) Chromium, driven by Playwright.

A notebook starts a cluster of 2 TaskManagers x 2 slots and submits an unbounded job at
parallelism 2 with checkpointing on; the test runs it in JupyterLab and asserts what is on
the page: the cluster view's cards and slot grid (4 slots, 2 occupied by the job), the
dashboard's subtask rows, and that a click on "Trigger checkpoint" adds a COMPLETED row to
the checkpoint history and brings the committed records into the live results table.
Screenshots go to ``out/browser/`` (the CI's artifacts).

Needs Chromium (``make test`` installs Debian's package when it can: scripts/ensure_browser.sh),
and playwright and jupyterlab (test extras); skipped, saying which is missing, otherwise.
"""

from __future__ import annotations

import importlib.util
import json
import pathlib
import time

import pytest

_spec = importlib.util.spec_from_file_location("lab_server", pathlib.Path(__file__).with_name("lab_server.py"))
lab_server = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(lab_server)

REPO = pathlib.Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "out" / "browser"

CELLS = [
    "%load_ext streamkernel",
    "%flink start --taskmanagers 2 --slots 2",
    "%%flink --show none --parallelism 2 --submit --name browser-job\n"
    "from streamkernel.common import WatermarkStrategy\n"
    "from streamkernel.datastream.connectors.collect import CollectSink\n"
    "from streamkernel.datastream.connectors.datagen import DataGeneratorSource\n"
    "env.enable_checkpointing(600_000)  # on, but only the button below triggers one\n"
    "words = env.from_source(DataGeneratorSource(lambda i: ('w%d' % (i % 7), 1), count=None,\n"
    "                                            rate_limiter_strategy=200.0), WatermarkStrategy.no_watermarks(), 'words')\n"
    "counts = words.key_by(lambda p: p[0]).reduce(lambda a, b: (a[0], a[1] + b[1])).name('Counts')\n"
    "counts.sink_to(CollectSink())",
]

KERNEL_READY = """() => {
  const widget = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  const session = widget && widget.sessionContext && widget.sessionContext.session;
  return !!(session && session.kernel && session.kernel.connectionStatus === 'connected'
            && session.kernel.status === 'idle');
}"""


def _notebook(path: pathlib.Path) -> None:
    cells = [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": source}
             for source in CELLS]
    path.write_text(json.dumps({"cells": cells, "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                                             "language": "python"}},
                                "nbformat": 4, "nbformat_minor": 5}))


@pytest.fixture
def browser_page(tmp_path: pathlib.Path):
    pytest.importorskip("jupyterlab", reason="the browser test needs jupyterlab (pip install -e '.[test]')")
    sync_api = pytest.importorskip("playwright.sync_api", reason="the browser test needs playwright (test extras)")
    chromium = lab_server.chromium_path()
    if chromium is None:
        pytest.skip("no Chromium on this machine (apt-get install chromium; make test installs it when root)")
    _notebook(tmp_path / "cockpit.ipynb")
    server = lab_server.LabServer(tmp_path).start()
    try:
        with sync_api.sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
            try:
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                yield page, server
            finally:
                browser.close()
    finally:
        server.stop()


def _count(page, selector: str) -> int:
    return page.locator(selector).count()


def _wait_for_count(page, selector: str, wanted: int, timeout: float = 60.0) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _count(page, selector) == wanted:
            return wanted
        time.sleep(0.2)
    raise AssertionError(f"{selector}: {_count(page, selector)} on the page, expected {wanted}")


def test_jupyterlab_shows_the_slot_grid_the_metrics_and_a_checkpoint_after_a_click(browser_page) -> None:
    page, server = browser_page
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.goto(server.url("cockpit.ipynb"))
    page.wait_for_function(KERNEL_READY, timeout=90_000)  # idle in the toolbar is not enough (FIELD-NOTES)
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")

    page.locator(".sk-taskmanager").first.wait_for(state="attached", timeout=60_000)
    assert _count(page, ".sk-taskmanager") == 2
    assert _count(page, ".sk-slot") == 4
    _wait_for_count(page, ".sk-slot-occupied", 2)  # the job's two slots (slot sharing), live
    assert page.locator(".sk-slot-occupied .sk-chip").count() == 4  # words (1/2), Counts -> sink (1/2) ...
    page.locator(".sk-subtask-row").first.wait_for(state="attached", timeout=60_000)
    _wait_for_count(page, ".sk-subtask-row", 4)  # 2 vertices x parallelism 2
    page.locator('.sk-status[data-status="RUNNING"]').first.wait_for(state="attached", timeout=60_000)
    assert _count(page, ".sk-checkpoint-row") == 0
    page.screenshot(path=str(ARTIFACTS / "cockpit-running.png"), full_page=True)

    page.locator("button.sk-button-checkpoint").first.scroll_into_view_if_needed()
    page.locator("button.sk-button-checkpoint").first.click()
    page.locator('.sk-checkpoint-row[data-status="COMPLETED"]').first.wait_for(state="attached", timeout=60_000)
    assert page.locator(".sk-message").first.inner_text().startswith("Checkpoint completed")
    page.wait_for_function("() => [...document.querySelectorAll('.sk-results')]"
                           ".some(e => parseInt(e.dataset.total) > 0)", timeout=60_000)
    page.screenshot(path=str(ARTIFACTS / "cockpit-after-checkpoint.png"), full_page=True)
    assert (ARTIFACTS / "cockpit-after-checkpoint.png").stat().st_size > 10_000
    page.evaluate("() => window.jupyterapp.commands.execute('kernelmenu:shutdown')")
