"""Flink's Web UI files served from its jar (streamkernel.runtime.rest.web_ui).

Against the real ``flink-dist-2.3.0.jar`` that ``scripts/ensure_flink_tools.sh`` installs
(skipped, saying how to install it, where it is missing), and against a small zip built here
for the edge cases: traversal in every spelling, directories, laziness, caching headers,
finding the jar, and the page shown without it.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from streamkernel.errors import IllegalConfigurationError
from streamkernel.runtime.rest.web_ui import (
    INSTALL_HINT,
    DashboardFiles,
    entry_name,
    fallback_page,
    find_dashboard,
)

REPO = Path(__file__).resolve().parents[3]
_spec = importlib.util.spec_from_file_location("flink_tools", REPO / "tests" / "flink_tools.py")
assert _spec is not None and _spec.loader is not None
flink_tools = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(flink_tools)

JS = "text/javascript; charset=utf-8"
# A file outside web/ in the real jar: what a traversal would reach if it were not refused.
TRAVERSALS = [
    "/../META-INF/MANIFEST.MF",
    "/assets/../../META-INF/MANIFEST.MF",
    "/%2e%2e/META-INF/MANIFEST.MF",
    "/%2E%2E%2FMETA-INF%2FMANIFEST.MF",
    "/%252e%252e/META-INF/MANIFEST.MF",
    "/..%5cMETA-INF%5cMANIFEST.MF",
    "/..\\META-INF\\MANIFEST.MF",
    "//META-INF/MANIFEST.MF",
    "/./index.html",
    "/index.html%00.js",
    "/index.html\x00",
    "/C:/Windows/win.ini",
    "/%ff%fe",
]


@pytest.fixture(scope="module")
def real_jar() -> Path:
    return flink_tools.flink_home() / "lib" / f"flink-dist-{flink_tools.FLINK_VERSION}.jar"


@pytest.fixture
def small_jar(tmp_path: Path) -> Path:
    jar = tmp_path / "flink-dist-9.9.9.jar"
    with zipfile.ZipFile(jar, "w") as archive:
        archive.writestr("web/index.html", '<base href="./"><script src="main.0123456789abcdef.js"></script>')
        archive.writestr("web/main.0123456789abcdef.js", "console.log('main');")
        archive.writestr("web/assets/flink.svg", "<svg/>")
        archive.writestr("web/assets/favicon/manifest.json", "{}")
        archive.writestr("web/3rdpartylicenses.txt", "licenses")
        archive.writestr("web/assets/", "")
        archive.writestr("secret.txt", "outside web/")
    return jar


def test_the_real_dashboard_serves_index_html_at_the_root(real_jar: Path) -> None:
    files = DashboardFiles(real_jar)
    index = files.get("/")
    assert index is not None
    assert index.content_type == "text/html; charset=utf-8"
    text = index.body.decode("utf-8")
    assert "<title>Apache Flink Web Dashboard</title>" in text
    assert '<base href="./">' in text  # every asset and API call is relative to where index.html is
    assert index.headers["Cache-Control"] == "no-cache"
    assert files.get("/index.html") == index


def test_the_real_dashboard_serves_its_hashed_main_bundle_as_javascript(real_jar: Path) -> None:
    files = DashboardFiles(real_jar)
    index = files.get("/")
    assert index is not None
    match = re.search(r'src="(main\.[0-9a-f]{16}\.js)"', index.body.decode("utf-8"))
    assert match, "index.html names no hashed main bundle"
    bundle = files.get("/" + match.group(1))
    assert bundle is not None
    assert bundle.content_type == JS and bundle.headers["Content-Type"] == JS
    assert bundle.headers["Cache-Control"] == "public, max-age=31536000, immutable"
    assert len(bundle.body) > 100_000
    assert b'BASE_URL="."' in bundle.body  # the API is called relative to index.html
    with zipfile.ZipFile(real_jar) as archive:
        assert bundle.body == archive.read("web/" + match.group(1))


def test_the_real_dashboard_serves_assets_with_their_types(real_jar: Path) -> None:
    files = DashboardFiles(real_jar)
    svg = files.get("/assets/images/flink.svg")
    icon = files.get("/assets/favicon/favicon-32x32.png")
    assert svg is not None and svg.content_type == "image/svg+xml"
    assert icon is not None and icon.content_type == "image/png" and icon.body[:4] == b"\x89PNG"
    assert icon.headers["Cache-Control"] == "no-cache"  # not hashed: revalidated by its ETag


@pytest.mark.parametrize("path", TRAVERSALS)
def test_the_real_dashboard_refuses_traversal(real_jar: Path, path: str) -> None:
    with zipfile.ZipFile(real_jar) as archive:
        assert "META-INF/MANIFEST.MF" in archive.namelist()  # there is something to reach
    assert DashboardFiles(real_jar).get(path) is None


def test_files_are_served_from_web_only(small_jar: Path) -> None:
    files = DashboardFiles(small_jar)
    assert files.get("/secret.txt") is None  # web/secret.txt does not exist
    for path in ("/../secret.txt", "/%2e%2e/secret.txt", "/%2e%2e%2fsecret.txt", "/assets/%2E%2E/../secret.txt",
                 "/%252e%252e/secret.txt", "/..%5csecret.txt", "/assets/..%2f..%2fsecret.txt"):
        assert files.get(path) is None, path


def test_directories_missing_files_and_odd_paths_are_refused(small_jar: Path) -> None:
    files = DashboardFiles(small_jar)
    for path in ("/assets", "/assets/", "/assets//flink.svg", "/missing.js", "/index.html/", "/web/index.html"):
        assert files.get(path) is None, path
    assert files.get("") is not None  # an empty path is the root


def test_a_percent_encoded_plain_path_is_served(small_jar: Path) -> None:
    files = DashboardFiles(small_jar)
    served = files.get("/assets%2Fflink.svg")
    assert served is not None and served.body == b"<svg/>"
    assert files.get("/index.html?v=1") == files.get("/")


def test_content_types_and_caching_headers(small_jar: Path) -> None:
    files = DashboardFiles(small_jar)
    main = files.get("/main.0123456789abcdef.js")
    manifest = files.get("/assets/favicon/manifest.json")
    licenses = files.get("/3rdpartylicenses.txt")
    assert main is not None and manifest is not None and licenses is not None
    assert main.content_type == JS
    assert main.headers["Cache-Control"] == "public, max-age=31536000, immutable"
    assert manifest.content_type == "application/json"
    assert licenses.content_type == "text/plain; charset=utf-8"
    assert licenses.headers["Cache-Control"] == "no-cache"
    assert main.headers["X-Content-Type-Options"] == "nosniff"
    etags = {main.headers["ETag"], manifest.headers["ETag"], licenses.headers["ETag"]}
    assert len(etags) == 3 and all(re.fullmatch(r'"[0-9a-f]{8}-[0-9a-f]+"', etag) for etag in etags)


def test_the_jar_is_opened_lazily_and_files_are_read_once(tmp_path: Path, small_jar: Path) -> None:
    later = tmp_path / "later" / "flink-dist.jar"
    files = DashboardFiles(later)  # nothing is opened yet: the jar need not exist
    later.parent.mkdir()
    later.write_bytes(small_jar.read_bytes())
    first = files.get("/")
    assert first is not None
    later.unlink()  # served from memory from now on
    assert files.get("/") is first
    files.close()


def test_entry_names() -> None:
    assert entry_name("/") == "web/index.html"
    assert entry_name("/assets/images/flink.svg") == "web/assets/images/flink.svg"
    assert entry_name("/a/../b") is None
    assert entry_name("/a/./b") is None


def test_find_dashboard_prefers_the_configured_jar(monkeypatch: pytest.MonkeyPatch, small_jar: Path,
                                                   tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "lib").mkdir(parents=True)
    (home / "lib" / "flink-dist-2.3.0.jar").write_bytes(small_jar.read_bytes())
    monkeypatch.setenv("FLINK_HOME", str(home))
    assert find_dashboard({"web.dashboard.jar": str(small_jar)}) == small_jar
    assert find_dashboard({}) == home / "lib" / "flink-dist-2.3.0.jar"


def test_a_configured_jar_that_is_not_there_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(IllegalConfigurationError, match=r"^web\.dashboard\.jar: .*nope\.jar.* is not a file"):
        find_dashboard({"web.dashboard.jar": str(tmp_path / "nope.jar")})


def test_find_dashboard_finds_an_installed_pyflink_without_importing_it(monkeypatch: pytest.MonkeyPatch,
                                                                         tmp_path: Path, small_jar: Path) -> None:
    site = tmp_path / "site"
    package = site / "pyflink"
    (package / "lib").mkdir(parents=True)
    (package / "__init__.py").write_text("raise RuntimeError('pyflink must not be imported')\n")
    (package / "lib" / "flink-dist-2.3.0.jar").write_bytes(small_jar.read_bytes())
    monkeypatch.delenv("FLINK_HOME", raising=False)
    monkeypatch.syspath_prepend(str(site))
    assert find_dashboard() == package / "lib" / "flink-dist-2.3.0.jar"
    assert "pyflink" not in sys.modules


def test_find_dashboard_without_any_jar(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("FLINK_HOME", str(tmp_path))  # no lib/flink-dist-*.jar there
    monkeypatch.setattr(sys, "path", [])  # no installed pyflink either
    assert find_dashboard() is None


def test_the_fallback_page_says_how_to_get_the_dashboard_and_lists_the_api() -> None:
    page = fallback_page(["/overview", "/jobs/:jobid", "/jobs/<script>"])
    assert INSTALL_HINT in page and "pip install --no-deps apache-flink-libraries==2.3.0" in page
    assert "<code>/overview</code>" in page and "<code>/jobs/:jobid</code>" in page
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "web.dashboard.jar" in page


def test_importing_the_module_reads_no_jar() -> None:
    code = ("import sys; import streamkernel.runtime.rest.web_ui; "
            "assert 'zipfile' not in sys.modules and 'pyflink' not in sys.modules, sorted(sys.modules)")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)
