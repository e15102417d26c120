"""The runtime: one package per Flink component, each importing only the packages below it.

Bottom to top: core, rpc, state, network, checkpoint, highavailability, sources, operators, sinks, tasks,
taskmanager, resourcemanager, jobmaster, dispatcher, minicluster (``docs/architecture.md``,
"The house"; the order is checked by ``tests/test_layering.py``).
"""
