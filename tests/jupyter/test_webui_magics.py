"""%flink start prints the REST API's URL; %flink webui links to it (and shows it in a notebook)."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import pytest
from IPython.core.error import UsageError


def test_start_prints_the_rest_url_on_its_own_line_and_it_answers(shell: Any, capsys: pytest.CaptureFixture) -> None:
    ip, _ = shell
    ip.run_line_magic("flink", "start --taskmanagers 1 --slots 2")
    url = ip.user_ns["cluster"].rest_url
    assert url is not None and url.startswith("http://127.0.0.1:")
    assert url in capsys.readouterr().out.splitlines()
    with urllib.request.urlopen(url + "/overview", timeout=30) as response:
        assert json.loads(response.read())["slots-total"] == 2
    ip.run_line_magic("flink", "webui")
    assert f"Flink's Web UI and REST API: {url}" in capsys.readouterr().out.splitlines()
    ip.run_line_magic("flink", "stop")
    assert ip.user_ns["cluster"].rest_url is None


def test_webui_in_a_notebook_shows_a_link_and_an_iframe(shell: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from IPython.display import HTML, IFrame

    from streamkernel.jupyter import cockpit_commands

    ip, shown = shell
    ip.run_line_magic("flink", "start --taskmanagers 1 --slots 1")
    monkeypatch.setattr(cockpit_commands, "widgets_frontend", lambda shell: True)
    ip.run_line_magic("flink", "webui")
    link, frame = shown[-2:]
    url = ip.user_ns["cluster"].rest_url
    assert isinstance(link, HTML) and url in link.data
    assert isinstance(frame, IFrame) and frame.src == url


def test_webui_without_a_cluster_says_how_to_start_one(shell: Any) -> None:
    ip, _ = shell
    with pytest.raises(UsageError, match="no cluster is running"):
        ip.run_line_magic("flink", "webui")
