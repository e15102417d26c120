# streamkernel: two commands do all set-up on a fresh machine.
#   make demo   - virtual environment, install, run the word-count demo (graphs as SVG in out/demo)
#   make test   - virtual environment, install with test extras, run every test and notebook
#                 (two pytest-xdist workers);
#                 then the py_matrix subset under every other Python setup.cfg declares (.venv-3.X)
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
CKSUM  := $(shell cat setup.cfg pyproject.toml | cksum | cut -d' ' -f1)
# The demo needs the package alone; the tests add the test extras (PySpark, JupyterLab, ...).
BASE_STAMP := $(VENV)/.installed-base-$(CKSUM)
TEST_STAMP := $(VENV)/.installed-test-$(CKSUM)

.PHONY: demo test lint install install-test graphviz browser zookeeper prometheus flink-tools clean

$(PY):
	$(PYTHON) -m venv $(VENV)

$(BASE_STAMP): | $(PY)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e .
	rm -f $(VENV)/.installed-base-*
	touch $@

$(TEST_STAMP): $(BASE_STAMP)
	$(PY) -m pip install --quiet -e ".[test]"
	rm -f $(VENV)/.installed-test-*
	touch $@

install: $(BASE_STAMP)

install-test: $(TEST_STAMP)

graphviz:
	@bash scripts/ensure_graphviz.sh

browser:
	@bash scripts/ensure_browser.sh

# Apache ZooKeeper (Debian's package) for the high-availability tests, which start their own server.
zookeeper:
	@bash scripts/ensure_zookeeper.sh

# A Prometheus server (Debian's package) for the metric reporter tests, which start their own and scrape.
prometheus:
	@bash scripts/ensure_prometheus.sh

# Flink's own CLI and Web UI files (apache-flink, apache-flink-libraries with --no-deps) in
# .flink-tools/, outside the venv, for the tests against the REST API; Java 17 runs the CLI.
flink-tools: $(BASE_STAMP)
	@bash scripts/ensure_flink_tools.sh $(PY)

demo: install graphviz
	$(PY) -m streamkernel demo --out out/demo

lint: install-test
	$(VENV)/bin/ruff check streamkernel tests bench scripts
	$(VENV)/bin/mypy

# Three pytest-xdist workers on two cores (-n 3): much of the suite waits on JVM starts, subprocesses
# and clusters (a whole run keeps the two cores about 60% busy), which the other workers use. --dist loadfile keeps each file in one worker: a notebook's cells run in
# order in one kernel, and module-scoped fixtures (a SparkSession, a ZooKeeper, a running job) start once.
# --no-loadscope-reorder keeps the order conftest.py gives: the files that start a JVM and the
# notebooks first (xdist's default hands out files with many tests first, the long ones last).
test: lint install-test graphviz browser zookeeper prometheus flink-tools
	$(PY) -m pytest tests notebooks --nbval --nbval-current-env --nbval-sanitize-with notebooks/sanitize.cfg -p no:cacheprovider -n 3 --dist loadfile --no-loadscope-reorder
	bash scripts/test_other_pythons.sh $(PY)

clean:
	rm -rf $(VENV) .venv-3.* out .pytest_cache .flink-tools
