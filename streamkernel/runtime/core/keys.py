"""What the runtime calls per record to get a key: the key selector's plain function."""

from __future__ import annotations

from typing import Any

__all__ = ["key_function"]


def key_function(selector: Any) -> Any:
    """The cheapest callable for a key selector, what operators and record writers call per
    record: a KeySelector's ``get_key`` (for ``key_by(lambda ...)``'s wrapper that *is* the
    lambda: no wrapper frame per record), else the callable itself; None stays None."""
    get_key = getattr(selector, "get_key", None)
    return get_key if callable(get_key) else selector
