"""``python -m streamkernel install-kernel``: a Jupyter kernel "Python 3 (streamkernel)".

The kernel is IPython's own (``ipykernel_launcher``) started with ``--ext=streamkernel``:
every notebook on it has the ``%flink`` / ``%%flink`` magics loaded and ``env`` (the
notebook's StreamExecutionEnvironment) bound, with no ``%load_ext`` cell. The kernelspec
is written by ipykernel (:func:`ipykernel.kernelspec.write_kernel_spec`: its logos, this
interpreter) and installed by jupyter_client's :class:`KernelSpecManager`, so it goes where
``jupyter kernelspec list`` looks: the user's data directory (``--user``), this
environment's prefix (``--sys-prefix``), a given prefix, or the system-wide directory.
"""

from __future__ import annotations

import os
import sys
import tempfile
from typing import Optional

__all__ = ["KERNEL_NAME", "DISPLAY_NAME", "kernel_arguments", "install_kernel"]

#: The kernelspec's directory name (``jupyter kernelspec list`` shows it).
KERNEL_NAME = "streamkernel"

#: What Jupyter's launcher and kernel menu show.
DISPLAY_NAME = "Python 3 (streamkernel)"


def kernel_arguments() -> list[str]:
    """The arguments after ``python -m ipykernel_launcher -f {connection_file}``: load the extension."""
    return ["--ext=streamkernel"]


def install_kernel(user: bool = False, sys_prefix: bool = False, prefix: Optional[str] = None,
                   kernel_name: str = KERNEL_NAME, display_name: str = DISPLAY_NAME) -> str:
    """Install the kernelspec; returns the directory it was installed to.

    ``user``: the user's Jupyter data directory; ``sys_prefix``: this Python environment
    (``sys.prefix``, what a virtual environment or conda env wants); ``prefix``: another
    prefix (``<prefix>/share/jupyter/kernels``); none of them: the system-wide directory
    (may need root). Raises ValueError when more than one place is asked for.
    """
    from ipykernel.kernelspec import write_kernel_spec
    from jupyter_client.kernelspec import KernelSpecManager

    if sum((bool(user), bool(sys_prefix), prefix is not None)) > 1:
        raise ValueError("install_kernel: choose one of user=True, sys_prefix=True or prefix=...")
    if sys_prefix:
        prefix = sys.prefix
    with tempfile.TemporaryDirectory(prefix="streamkernel-kernelspec-") as staging:
        spec_dir = write_kernel_spec(
            os.path.join(staging, kernel_name), extra_arguments=kernel_arguments(),
            overrides={"display_name": display_name, "metadata": {"debugger": True, "streamkernel": True}})
        return KernelSpecManager().install_kernel_spec(spec_dir, kernel_name, user=user, prefix=prefix)
