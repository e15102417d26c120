"""Run a teaching notebook and store its outputs (what nbval then checks): ``python scripts/run_notebook.py NB...``.

Each notebook runs top to bottom in a fresh kernel of this environment (nbclient), from
the notebooks directory, over IPC (no TCP ports to race for with other kernels being started),
and is written back with its new outputs (without the saved widget state: each live view's
output carries its last picture as text/html). Review the diff: cells whose output varies from
run to run carry the ``nbval-ignore-output`` tag.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile

import nbformat
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient


def main(paths: list[str]) -> int:
    """Execute and rewrite every notebook in ``paths``."""
    for path in paths:
        notebook = nbformat.read(path, as_version=4)
        sockets = tempfile.mkdtemp(prefix="sk-kernel-", dir="/tmp")  # short: a socket's path has at most 107 bytes
        manager = KernelManager(kernel_name="python3", transport="ipc", ip=os.path.join(sockets, "kernel"))
        try:
            NotebookClient(notebook, km=manager, timeout=600, kernel_name="python3",
                           resources={"metadata": {"path": os.path.dirname(os.path.abspath(path))}}).execute()
        finally:
            if manager.has_kernel:  # a manager handed in is not shut down by nbclient
                manager.shutdown_kernel(now=True)
            shutil.rmtree(sockets, ignore_errors=True)
        notebook.metadata.pop("widgets", None)  # live widget state: the outputs' text/html stands in for it
        nbformat.write(notebook, path)
        print(f"ran {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
