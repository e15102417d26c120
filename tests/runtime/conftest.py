"""tests/runtime mirrors streamkernel/runtime's packages; the test helpers they share live here.

This directory is put on ``sys.path`` so that every test under it can ``import operator_harness``
(the operator test harness) wherever it sits.
"""

from __future__ import annotations

import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
