"""The notebook face of streamkernel: the ``%flink`` / ``%%flink`` magics and their displays.

Nothing here is engine logic: every magic parses its line, calls the public Python API
(``StreamExecutionEnvironment``, the graphs, the viz layer) and displays the result.
"""
