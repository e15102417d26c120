"""Values of declared types, as PyFlink converts them at typed boundaries (issue 13).

PyFlink encodes the output of an operator with an ``output_type`` with that type's coder, so
the next function, ``print()`` and ``execute_and_collect`` see the value after the round
trip. The expectations here are computed by plain Python from the programs' data:

- ``Types.FLOAT()`` is a 32-bit float: :func:`f32` rounds with ``struct``; Java prints it
  with ``Float.toString`` (:func:`java_float`, written here from numpy's shortest float32
  digits and JDK 17's rule for whole floats), a ``Row`` field with Python's ``str`` (PyFlink
  maps Rows to text in Python before printing);
- ``DOUBLE`` turns ints into floats; the integral types check their range and take
  ``int()`` of a float (Cython's conversion in PyFlink's coders);
- a record the type cannot hold fails the job, here with an error naming the operator,
  the record and the type.

``typed_values.py`` was run under real PyFlink 2.3 (Java 17); its output equals these
expectations.
"""

from __future__ import annotations

import datetime
import math
import struct
import subprocess
import sys
from decimal import Decimal

import numpy as np
import pytest

from streamkernel.common import Row, Types
from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.errors import JobExecutionError
from tests.compat.test_pyflink_programs import run


# --------------------------------------------------------------------------- Java's view
def f32(x: float) -> float:
    """``x`` rounded to a 32-bit float and widened back (what PyFlink's FLOAT coder gives)."""
    return struct.unpack(">f", struct.pack(">f", x))[0]


def java_float(x: float) -> str:
    """Java 17's ``Float.toString`` of ``x`` rounded to 32 bits."""
    value = f32(x)
    if value == int(value) and abs(value) < 2 ** 63:
        # JDK 17 prints a whole float from its exact integer, rounding away only the
        # floor(p * log10(2)) digits that 2^p (p = binary exponent - 25) makes insignificant
        n = int(abs(value))
        p = n.bit_length() - 1 - 25
        drop = int(p * math.log10(2)) if p > 1 else 0
        n = (n + 10 ** drop // 2) // 10 ** drop if drop else n
        digits = str(n)
        exponent = len(digits) - 1 + drop
        mantissa = digits.rstrip("0") or "0"
    else:
        sci = np.format_float_scientific(np.float32(value), unique=True, trim="-")  # '3.3333334e-01'
        mantissa_text, exp_text = sci.lstrip("-").split("e")
        mantissa = mantissa_text.replace(".", "")
        exponent = int(exp_text)
    return java_layout("-" if value < 0 else "", mantissa, exponent, abs(value))


def java_double(x: float) -> str:
    """Java's ``Double.toString`` of ``x`` (numpy's shortest digits; right for the values used here)."""
    value = float(x)
    sci = np.format_float_scientific(value, unique=True, trim="-")
    mantissa_text, exp_text = sci.lstrip("-").split("e")
    return java_layout("-" if value < 0 else "", mantissa_text.replace(".", ""), int(exp_text), abs(value))


def java_layout(sign: str, mantissa: str, exponent: int, magnitude: float) -> str:
    """Java's layout of digits ``mantissa`` (d.ddd x 10^exponent): plain in [1e-3, 1e7), else ``d.dddEn``."""
    if 1e-3 <= magnitude < 1e7:
        if exponent < 0:
            return f"{sign}0.{'0' * (-exponent - 1)}{mantissa}"
        whole = mantissa[:exponent + 1].ljust(exponent + 1, "0")
        return f"{sign}{whole}.{mantissa[exponent + 1:] or '0'}"
    return f"{sign}{mantissa[0]}.{mantissa[1:] or '0'}E{exponent}"


def test_java_float_reference_examples():
    """The helper itself against Float.toString outputs seen from Java 17."""
    assert [java_float(v) for v in (1 / 3, 2 / 3, 1e10, 1e-5, 0.1, 3, 1234567.9, 0.001, 1e7, 123456789.0)] == [
        "0.33333334", "0.6666667", "1.0E10", "1.0E-5", "0.1", "3.0", "1234567.9", "0.001", "1.0E7", "1.23456792E8"]
