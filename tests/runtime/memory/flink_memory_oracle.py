"""Flink's own memory calculator as a test oracle: ``BashJavaUtils GET_TM_RESOURCE_PARAMS`` /
``GET_JM_RESOURCE_PARAMS`` of Flink 2.3 (``pyflink/bin/bash-java-utils.jar`` with ``pyflink/lib/*``),
run over many configurations in ONE JVM (``FlinkMemoryOracle.java``, started with Java's
source launcher), or, without a JDK compiler, one JVM per configuration in parallel.

Load it as tests/flink_tools.py is loaded (pytest runs with ``--import-mode=importlib``).
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import pytest

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("flink_tools", HERE.parents[1] / "flink_tools.py")
assert _spec is not None and _spec.loader is not None
flink_tools = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(flink_tools)

RESULT_PREFIX = "BASH_JAVA_UTILS_EXEC_RESULT:"
_DYNAMIC = re.compile(r"-D ([^=\s]+)=(\S+)")
#: every log line of the JVM tagged with its level and logger (flink_memory_oracle_log4j2.properties)
_LOG_LINE = re.compile(r"^###LOG (\w+)\s+(\S+) - (.*)$", re.MULTILINE)
_LOG4J = f"-Dlog4j.configurationFile={HERE / 'flink_memory_oracle_log4j2.properties'}"


@dataclass
class OracleResult:
    """What Flink's calculator printed for one configuration: its JVM options and ``-D`` entries, or
    its error (the messages of the exception chain)."""

    jvm_parameters: Optional[str] = None
    dynamic: dict[str, str] = field(default_factory=dict)
    error: Optional[str] = None
    #: what Flink logged while computing, in order: (level, logger, message)
    logs: list[tuple[str, str, str]] = field(default_factory=list)

    def memory_bytes(self) -> dict[str, int]:
        """The ``-D`` memory entries as bytes (Flink writes them ``123b``)."""
        return {key: int(value[:-1]) for key, value in self.dynamic.items() if ".memory." in key}


def _parse(output: str) -> OracleResult:
    error = re.search(r"^###ERROR (.*)$", output, re.MULTILINE)
    results = [line[len(RESULT_PREFIX):] for line in output.splitlines() if line.startswith(RESULT_PREFIX)]
    logs = [(level, logger, message) for level, logger, message in _LOG_LINE.findall(output)]
    if error or len(results) < 2:
        message = error.group(1) if error else next(
            (line for line in output.splitlines() if "Exception" in line), output.strip()[-500:] or "no output")
        return OracleResult(error=message, logs=logs)
    return OracleResult(jvm_parameters=results[0].strip(), dynamic=dict(_DYNAMIC.findall(results[1])), logs=logs)


def _arguments(command: str, conf_dir: str, configuration: dict[str, str]) -> list[str]:
    arguments = [command, "--configDir", conf_dir]
    for key, value in configuration.items():
        arguments += ["-D", f"{key}={value}"]
    return arguments


def run_oracle(cases: list[tuple[str, dict[str, str]]], timeout: float = 240.0) -> list[OracleResult]:
    """Flink's result for each ``(command, configuration)`` (command: ``GET_TM_RESOURCE_PARAMS`` or
    ``GET_JM_RESOURCE_PARAMS``), each run on an empty config.yaml plus the configuration as ``-D``.
    Skips the calling test when Flink's tools or Java are missing."""
    home = flink_tools.flink_home()
    java = flink_tools.java_executable()
    classpath = f"{home / 'bin' / 'bash-java-utils.jar'}:{home / 'lib'}/*"
    with tempfile.TemporaryDirectory(prefix="flink-memory-oracle-") as conf_dir:
        (Path(conf_dir) / "config.yaml").write_text("", encoding="utf-8")
        lines = ["\t".join(_arguments(command, conf_dir, configuration)) for command, configuration in cases]
        done = subprocess.run([java, _LOG4J, "-cp", classpath, str(HERE / "FlinkMemoryOracle.java")], input="\n".join(lines) + "\n",
                              capture_output=True, text=True, timeout=timeout, check=False)
        chunks = re.split(r"^###CASE \d+$", done.stdout, flags=re.MULTILINE)[1:]
        if len(chunks) == len(cases):
            return [_parse(chunk) for chunk in chunks]
        # no compiler for the source launcher (a JRE): one JVM per case, in parallel
        main = "org.apache.flink.runtime.util.bash.BashJavaUtils"

        def one(case: tuple[str, dict[str, str]]) -> OracleResult:
            run = subprocess.run([java, _LOG4J, "-cp", classpath, main, *_arguments(case[0], conf_dir, case[1])],
                                 capture_output=True, text=True, timeout=timeout, check=False)
            output = run.stdout + run.stderr
            return _parse(output if run.returncode == 0 else f"###ERROR {_exception(output)}\n")

        with ThreadPoolExecutor(max_workers=4) as pool:
            results = list(pool.map(one, cases))
        if all(result.error and "Could not find or load main class" in result.error for result in results):
            pytest.fail(f"Flink's BashJavaUtils did not run: {results[0].error}")
        return results


def _exception(output: str) -> str:
    return " <- ".join(line.strip() for line in output.splitlines()
                       if "Exception" in line and not line.lstrip().startswith("at ")) or output[-500:]
