"""The memory model against Flink's own calculator: every component of the TaskManager's and the
JobManager's process memory, byte for byte, over a table of configurations (Flink 2.3's
``BashJavaUtils`` is the oracle: tests/runtime/memory/flink_memory_oracle.py), and, where Flink
fails, that streamkernel fails too, naming the keys. For every configuration, the INFO and WARN
lines the calculation logs are Flink's, in Flink's order (the oracle tags each line of its JVM
with its logger; the memory utilities' lines are compared)."""

from __future__ import annotations

import importlib.util
import logging
import sys
from pathlib import Path

import pytest

from streamkernel.errors import IllegalConfigurationError
from streamkernel.runtime.memory import job_manager_process_spec_from_config, task_executor_process_spec_from_config

_spec = importlib.util.spec_from_file_location("flink_memory_oracle", Path(__file__).with_name("flink_memory_oracle.py"))
assert _spec is not None and _spec.loader is not None
oracle = importlib.util.module_from_spec(_spec)
sys.modules.setdefault(_spec.name, oracle)  # its dataclasses look their module up
_spec.loader.exec_module(oracle)

TM = "taskmanager.memory."
JM = "jobmanager.memory."
OK, FAILS = False, True

#: (id, configuration, whether Flink refuses it)
TM_CASES = [
    ("seeds-8g", {TM + "process.size": "8g"}, OK),
    ("config-yaml-1728m", {TM + "process.size": "1728m"}, OK),
    ("process-32g-overhead-max", {TM + "process.size": "32g"}, OK),
    ("process-1g-overhead-min", {TM + "process.size": "1g"}, OK),
    ("process-odd-bytes", {TM + "process.size": "1234567891"}, OK),
    ("process-forms", {TM + "process.size": "2 gb", TM + "task.off-heap.size": "1024 kb",
                       TM + "framework.heap.size": "134217728"}, OK),
    ("flink-1280m", {TM + "flink.size": "1280m"}, OK),
    ("flink-4g", {TM + "flink.size": "4g"}, OK),
    ("flink-too-small", {TM + "flink.size": "200m"}, FAILS),
    ("heap-managed", {TM + "task.heap.size": "1g", TM + "managed.size": "1g"}, OK),
    ("heap-managed-zero", {TM + "task.heap.size": "512m", TM + "managed.size": "0"}, OK),
    ("heap-managed-network-capped", {TM + "task.heap.size": "1g", TM + "managed.size": "1g",
                                     TM + "network.min": "16m", TM + "network.max": "32m"}, OK),
    ("heap-managed-flink", {TM + "task.heap.size": "1g", TM + "managed.size": "1g", TM + "flink.size": "2560m"}, OK),
    ("heap-managed-flink-network-below-min", {TM + "task.heap.size": "1g", TM + "managed.size": "1g",
                                              TM + "flink.size": "2304m"}, FAILS),
    ("heap-managed-exceed-flink", {TM + "task.heap.size": "2g", TM + "managed.size": "1g",
                                   TM + "flink.size": "2g"}, FAILS),
    ("heap-managed-process", {TM + "task.heap.size": "1g", TM + "managed.size": "1g", TM + "process.size": "3g"}, OK),
    ("heap-managed-process-overhead-out-of-range", {TM + "task.heap.size": "1g", TM + "managed.size": "1g",
                                                    TM + "process.size": "8g"}, FAILS),
    ("flink-heap-managed-fraction", {TM + "flink.size": "4g", TM + "task.heap.size": "1g"}, OK),
    ("heap-only-unsized", {TM + "task.heap.size": "1g"}, FAILS),
    ("process-and-flink", {TM + "process.size": "4g", TM + "flink.size": "3g"}, OK),
    ("process-and-flink-overhead-too-big", {TM + "process.size": "8g", TM + "flink.size": "4g"}, FAILS),
    ("process-less-than-flink", {TM + "process.size": "2g", TM + "flink.size": "2g"}, FAILS),
    ("managed-fraction-0", {TM + "process.size": "2g", TM + "managed.fraction": "0"}, OK),
    ("managed-fraction-0.9-exceeds", {TM + "process.size": "2g", TM + "managed.fraction": "0.9"}, FAILS),
    ("managed-fraction-1", {TM + "process.size": "2g", TM + "managed.fraction": "1.0"}, FAILS),
    ("managed-fraction-0.55", {TM + "process.size": "4g", TM + "managed.fraction": "0.55"}, OK),
    ("network-fraction-0.5", {TM + "process.size": "4g", TM + "network.fraction": "0.5",
                              TM + "managed.fraction": "0.2"}, OK),
    ("network-fixed-100m", {TM + "process.size": "2g", TM + "network.min": "100m", TM + "network.max": "100m"}, OK),
    ("network-max-1m", {TM + "process.size": "2g", TM + "network.min": "1m", TM + "network.max": "1m"}, OK),
    ("network-min-above-max", {TM + "process.size": "2g", TM + "network.min": "200m", TM + "network.max": "100m"},
     FAILS),
    ("overhead-fraction-0.25", {TM + "process.size": "2g", TM + "jvm-overhead.fraction": "0.25"}, OK),
    ("overhead-fixed-300m", {TM + "process.size": "3g", TM + "jvm-overhead.min": "300m",
                             TM + "jvm-overhead.max": "300m"}, OK),
    ("overhead-min-above-max", {TM + "process.size": "3g", TM + "jvm-overhead.min": "2g"}, FAILS),
    ("metaspace-exceeds-process", {TM + "process.size": "1g", TM + "jvm-metaspace.size": "1g"}, FAILS),
    ("deprecated-keys", {TM + "process.size": "2g", "taskmanager.memory.size": "100m",
                         "taskmanager.network.memory.fraction": "0.2", "taskmanager.network.memory.min": "32m"}, OK),
    ("slots-4", {TM + "process.size": "4g", "taskmanager.numberOfTaskSlots": "4"}, OK),
    # Flink logs that the derived size differs from the configured fraction's
    ("overhead-fraction-not-matching", {TM + "process.size": "4g", TM + "flink.size": "3g",
                                        TM + "jvm-overhead.fraction": "0.2"}, OK),
    ("network-fraction-not-matching-fine-grained", {TM + "flink.size": "2g", TM + "task.heap.size": "512m",
                                                    TM + "managed.size": "512m", TM + "network.fraction": "0.2"}, OK),
    ("network-fraction-not-matching-heap", {TM + "flink.size": "2g", TM + "task.heap.size": "512m",
                                            TM + "network.fraction": "0.3"}, OK),
    ("empty", {}, FAILS),
    ("bad-size", {TM + "process.size": "lots"}, FAILS),
]
# Odd sizes and fractions through each derivation (rounding of products and of the inverse fractions)
TM_CASES += [(f"sweep-process-{i}", {TM + "process.size": str(3_000_000_007 * i + 12_345),
                                     TM + "network.fraction": f"0.{i}7", TM + "managed.fraction": f"0.{5 - i}3",
                                     TM + "jvm-overhead.fraction": f"0.0{i}9"}, OK) for i in range(1, 6)]
TM_CASES += [(f"sweep-heap-managed-{i}", {TM + "task.heap.size": str(333_333_331 * i), TM + "managed.size": f"{77 * i}m",
                                          TM + "network.fraction": f"0.{i}3", TM + "jvm-overhead.fraction": f"0.{i}1",
                                          TM + "jvm-overhead.max": "4g", TM + "network.min": "1m"}, OK)
             for i in range(1, 6)]

JM_CASES = [
    ("config-yaml-1600m", {JM + "process.size": "1600m"}, OK),
    ("process-1g", {JM + "process.size": "1g"}, OK),
    ("process-16g-overhead-max", {JM + "process.size": "16g"}, OK),
    ("process-odd-bytes", {JM + "process.size": "987654321"}, OK),
    ("flink-1g", {JM + "flink.size": "1g"}, OK),
    ("heap-1g", {JM + "heap.size": "1g"}, OK),
    ("heap-and-flink", {JM + "heap.size": "1g", JM + "flink.size": "1152m"}, OK),
    ("heap-and-flink-off-heap-derived", {JM + "heap.size": "1g", JM + "flink.size": "2g"}, OK),
    ("heap-and-flink-and-off-heap-inconsistent", {JM + "heap.size": "1g", JM + "flink.size": "2g",
                                                  JM + "off-heap.size": "128m"}, FAILS),
    ("heap-exceeds-flink", {JM + "heap.size": "2g", JM + "flink.size": "1g"}, FAILS),
    ("flink-below-off-heap", {JM + "flink.size": "100m"}, FAILS),
    ("process-too-small-for-off-heap", {JM + "process.size": "500m"}, FAILS),
    ("no-off-heap", {JM + "heap.size": "512m", JM + "off-heap.size": "0"}, OK),
    ("direct-memory-limit", {JM + "process.size": "2g", JM + "enable-jvm-direct-memory-limit": "true"}, OK),
    # the heap below Flink's recommended 128m is warned about, however it comes
    ("heap-below-minimum", {JM + "heap.size": "100m"}, OK),
    ("heap-at-minimum", {JM + "heap.size": "128m"}, OK),
    ("flink-heap-below-minimum", {JM + "flink.size": "200m"}, OK),
    ("heap-and-flink-heap-below-minimum", {JM + "heap.size": "100m", JM + "flink.size": "300m"}, OK),
    ("overhead-fraction-not-matching", {JM + "process.size": "2g", JM + "flink.size": "1g",
                                        JM + "jvm-overhead.fraction": "0.2"}, OK),
    ("overhead-fraction-0.2", {JM + "process.size": "4g", JM + "jvm-overhead.fraction": "0.2"}, OK),
    ("process-and-flink", {JM + "process.size": "2g", JM + "flink.size": "1g"}, OK),
    ("heap-and-process", {JM + "heap.size": "1g", JM + "process.size": "1600m"}, OK),
    ("metaspace-exceeds-process", {JM + "process.size": "1g", JM + "jvm-metaspace.size": "1g"}, FAILS),
    ("overhead-min-above-max", {JM + "process.size": "2g", JM + "jvm-overhead.min": "2g"}, FAILS),
    ("empty", {}, FAILS),
]
JM_CASES += [(f"sweep-process-{i}", {JM + "process.size": str(2_000_000_011 * i + 777),
                                     JM + "jvm-overhead.fraction": f"0.{i}3", JM + "jvm-overhead.max": "8g",
                                     JM + "off-heap.size": f"{99 * i}m"}, OK) for i in range(1, 5)]


@pytest.fixture(scope="module")
def flink_results() -> dict[tuple[str, str], object]:
    """Flink's result of every case, computed once, in one JVM."""
    cases = [("GET_TM_RESOURCE_PARAMS", conf) for _, conf, _ in TM_CASES]
    cases += [("GET_JM_RESOURCE_PARAMS", conf) for _, conf, _ in JM_CASES]
    results = oracle.run_oracle(cases)
    names = [("tm", name) for name, _, _ in TM_CASES] + [("jm", name) for name, _, _ in JM_CASES]
    return dict(zip(names, results))


#: where Flink's memory calculation logs (ProcessMemoryUtils, Task/JobManager FlinkMemoryUtils and ProcessUtils);
#: not compared: Flink's Configuration (its deprecated-key warnings), GlobalConfiguration (loading the file) and
#: BashJavaUtils' "Final ... Memory configuration" box (streamkernel memory prints its own)
_FLINK_MEMORY_LOGGERS = ("org.apache.flink.runtime.util.config.memory.", "org.apache.flink.runtime.clusterframework."
                         "TaskExecutorProcessUtils", "org.apache.flink.runtime.jobmanager.JobManagerProcessUtils")


def _flink_logs(flink) -> list[tuple[str, str]]:
    return [(level, message) for level, logger, message in flink.logs if logger.startswith(_FLINK_MEMORY_LOGGERS)]


def _our_logs(caplog) -> list[tuple[str, str]]:
    return [("WARN" if record.levelno == logging.WARNING else record.levelname, record.getMessage())
            for record in caplog.records if record.name.startswith("streamkernel.runtime.memory")]


@pytest.mark.parametrize("name, configuration, fails", TM_CASES, ids=[case[0] for case in TM_CASES])
def test_taskmanager_memory_equals_flinks(flink_results, caplog, name, configuration, fails):
    flink = flink_results[("tm", name)]
    assert (flink.error is not None) == fails, f"the table expects Flink to {'fail' if fails else 'pass'}: {flink}"
    caplog.set_level(logging.INFO, logger="streamkernel.runtime.memory")
    if fails:
        with pytest.raises(IllegalConfigurationError, match="^TaskManager memory configuration failed: "):
            task_executor_process_spec_from_config(configuration)
        assert _our_logs(caplog) == _flink_logs(flink)
        return
    spec = task_executor_process_spec_from_config(configuration)
    assert _our_logs(caplog) == _flink_logs(flink)
    assert spec.jvm_parameters() == flink.jvm_parameters
    assert spec.to_dynamic_configs() == flink.memory_bytes()
    assert spec.num_slots == int(flink.dynamic["taskmanager.numberOfTaskSlots"])


@pytest.mark.parametrize("name, configuration, fails", JM_CASES, ids=[case[0] for case in JM_CASES])
def test_jobmanager_memory_equals_flinks(flink_results, caplog, name, configuration, fails):
    flink = flink_results[("jm", name)]
    assert (flink.error is not None) == fails, f"the table expects Flink to {'fail' if fails else 'pass'}: {flink}"
    caplog.set_level(logging.INFO, logger="streamkernel.runtime.memory")
    if fails:
        with pytest.raises(IllegalConfigurationError):
            job_manager_process_spec_from_config(configuration)
        assert _our_logs(caplog) == _flink_logs(flink)
        return
    spec = job_manager_process_spec_from_config(configuration)
    assert _our_logs(caplog) == _flink_logs(flink)
    assert spec.jvm_parameters() == flink.jvm_parameters
    assert spec.to_dynamic_configs() == flink.memory_bytes()


# Messages (Flink's wording, plus the keys each size comes from); no oracle needed.

def _error(function, configuration) -> str:
    with pytest.raises(IllegalConfigurationError) as raised:
        function(configuration)
    return str(raised.value)


def test_the_sum_exceeding_the_flink_memory_names_every_key_and_size():
    message = _error(task_executor_process_spec_from_config,
                     {TM + "task.heap.size": "2g", TM + "managed.size": "1g", TM + "flink.size": "2g"})
    assert message.startswith("TaskManager memory configuration failed: Sum of configured ")
    for key in ("task.heap.size", "managed.size", "framework.heap.size", "flink.size"):
        assert f"'{TM}{key}'" in message
    assert "exceed configured Total Flink Memory 'taskmanager.memory.flink.size' (2.000gb (2147483648 bytes))" in message


def test_network_bounds_and_overhead_fit_name_their_keys():
    bounds = _error(task_executor_process_spec_from_config,
                    {TM + "process.size": "2g", TM + "network.min": "200m", TM + "network.max": "100m"})
    assert "'taskmanager.memory.network.fraction'" in bounds and "'taskmanager.memory.network.min'" in bounds
    overhead = _error(task_executor_process_spec_from_config, {TM + "process.size": "8g", TM + "flink.size": "4g"})
    assert "Derived JVM Overhead size (3.750gb" in overhead and "'taskmanager.memory.jvm-overhead.max'" in overhead
    deprecated = _error(task_executor_process_spec_from_config,
                        {TM + "process.size": "1g", "taskmanager.memory.size": "2g"})
    assert "'taskmanager.memory.size'" in deprecated  # the key the user wrote


def test_a_wrong_memory_size_fails_naming_the_key_at_submission():
    from streamkernel.common.options import validate_configuration

    for value in ("8 gigs", "1.5g", "-1", "99999999999t"):
        with pytest.raises(IllegalConfigurationError, match=f"'{TM}managed.size'"):
            validate_configuration({TM + "managed.size": value})
    with pytest.raises(IllegalConfigurationError, match="'taskmanager.network.memory.fraction'"):
        validate_configuration({"taskmanager.network.memory.fraction": "a tenth"})
