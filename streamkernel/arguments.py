"""Argument types shared by the ``streamkernel`` command and the ``%flink`` magics (both argparse).

Like :mod:`streamkernel.errors`, every layer may import it: it holds no engine concept.
"""

from __future__ import annotations

import argparse

__all__ = ["positive_int"]


def positive_int(text: str) -> int:
    """An argparse type: an integer >= 1, with a message that names the bad value.

        >>> positive_int("3")
        3
    """
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value
