"""``streamkernel memory taskmanager|jobmanager [-D k=v ...] [--json]`` run as a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def _run(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "streamkernel", "memory", *args], capture_output=True, text=True,
                          env=env, timeout=120, check=False)


def test_the_seeds_8g_taskmanager_as_a_box_with_the_slot_share():
    done = _run("taskmanager", "-D", "taskmanager.memory.process.size=8g", "-D", "taskmanager.numberOfTaskSlots=4")
    assert done.returncode == 0, done.stderr
    rows = {line.strip("| ").rsplit("  ", 1)[0].strip(" -"): line for line in done.stdout.splitlines()}
    # Flink's figures for 8 GiB (checked against BashJavaUtils in test_memory_calculation.py)
    assert "8,192.0 MiB   100.0%" in rows["Total process memory             8,192.0 MiB"]
    assert any("Managed memory" in line and "2,846.7 MiB" in line and "34.8%" in line for line in rows.values())
    assert any("Network memory" in line and "711.7 MiB" in line and "8.7%" in line for line in rows.values())
    assert any("JVM overhead" in line and "819.2 MiB" in line and "10.0%" in line for line in rows.values())
    assert any("Managed memory per slot" in line and "711.7 MiB" in line and "(4 slots)" in line
               for line in rows.values())


def test_json_lists_flinks_keys_in_bytes():
    done = _run("taskmanager", "-D", "taskmanager.memory.process.size=1728m", "--json")
    assert done.returncode == 0, done.stderr
    keys = json.loads(done.stdout)
    assert keys["taskmanager.memory.process.size"] == 1728 << 20
    assert keys["taskmanager.memory.managed.size"] == 536870920
    assert keys["taskmanager.memory.task.heap.size"] == 402653174
    assert keys["taskmanager.memory.network.min"] == keys["taskmanager.memory.network.max"] == 134217730
    assert sum(keys[f"taskmanager.memory.{part}"] for part in (
        "framework.heap.size", "task.heap.size", "managed.size", "framework.off-heap.size", "task.off-heap.size",
        "network.min")) == keys["taskmanager.memory.flink.size"]


def test_without_sizes_the_config_yaml_default_is_used_and_said():
    done = _run("jobmanager")
    assert done.returncode == 0, done.stderr
    assert "jobmanager.memory.process.size: 1600m, default of config.yaml" in done.stdout
    assert "1,024.0 MiB" in done.stdout  # the JVM heap Flink derives from 1600m


def test_bad_input_is_one_line_and_exit_1():
    bad_value = _run("taskmanager", "-D", "taskmanager.memory.process.size=lots")
    assert bad_value.returncode == 1
    assert bad_value.stderr.count("\n") == 1 and "'taskmanager.memory.process.size'" in bad_value.stderr
    conflict = _run("jobmanager", "-D", "jobmanager.memory.heap.size=2g", "-D", "jobmanager.memory.flink.size=1g")
    assert conflict.returncode == 1 and conflict.stderr.count("\n") == 1
    assert "'jobmanager.memory.heap.size'" in conflict.stderr and "'jobmanager.memory.flink.size'" in conflict.stderr
    no_equals = _run("taskmanager", "-D", "taskmanager.memory.process.size")
    assert no_equals.returncode == 1 and "expected key=value" in no_equals.stderr


def test_usage_errors_exit_2():
    assert _run("nodemanager").returncode == 2


def test_flinks_calculation_logs_go_to_stderr_never_into_the_json():
    # the lines and figures Flink's BashJavaUtils prints for this configuration (test_memory_calculation.py
    # compares every table configuration's lines with Flink's own)
    done = _run("jobmanager", "-D", "jobmanager.memory.heap.size=100m", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["jobmanager.memory.heap.size"] == 100 << 20
    assert done.stderr.splitlines() == [
        "WARN  [] - The configured or derived JVM heap memory size (100.000mb (104857600 bytes)) is less than its "
        "recommended minimum value (128.000mb (134217728 bytes))",
        "INFO  [] - The derived from fraction jvm overhead memory (53.778mb (56390088 bytes)) is less than its min "
        "value 192.000mb (201326592 bytes), min value will be used instead"]
    box = _run("taskmanager", "-D", "taskmanager.memory.process.size=32g")
    assert box.returncode == 0 and "INFO" not in box.stdout
    assert box.stderr.splitlines() == [
        "INFO  [] - The derived from fraction jvm overhead memory (3.200gb (3435973888 bytes)) is greater than its "
        "max value 1024.000mb (1073741824 bytes), max value will be used instead"]
