"""``docs/configuration.md``, generated from the option registry.

Regenerate after changing an option::

    python -m streamkernel.common.options.docs > docs/configuration.md
"""

from __future__ import annotations

from typing import Any

from streamkernel.common.config_options import ConfigOption
from streamkernel.common.options import OPTION_GROUPS, group_options

__all__ = ["render_markdown"]

_HEADER = """# Configuration

Every configuration key streamkernel reads, with its type, default and what it configures
(generated from `streamkernel/common/options/`; regenerate with
`python -m streamkernel.common.options.docs > docs/configuration.md`).

Values are written as Flink writes them: durations `10 s`, `1 min`, `500 ms` (a bare number
is milliseconds; ISO-8601 `PT10S` works too), memory sizes `64 mb`, booleans `true`/`false`,
enum names in any case. Keys are Flink 2.x's; a deprecated (Flink 1.x) key is still read
when the key itself is unset. Every declared key of a job's configuration is checked when
the job is submitted (`execute()`, `execute_async()`): a value that does not fit fails at
once with `IllegalConfigurationError` naming the key, the value and what is expected.
Keys not listed here are accepted and ignored, as Flink ignores them.
"""


def _default(option: ConfigOption[Any]) -> str:
    if not option.has_default_value():
        return "(none)"
    return f"`{option.format(option.default_value())}`"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render_markdown() -> str:
    """The Markdown reference of every declared option, one table per group."""
    parts = [_HEADER]
    for group in OPTION_GROUPS:
        parts.append(f"\n## {group.__name__}\n\n{(group.__doc__ or '').strip()}\n")
        parts.append("| Key | Type | Default | Values | Description |\n|---|---|---|---|---|")
        for option in group_options(group):
            key = f"`{option.key()}`"
            if option.deprecated_keys():
                key += " (deprecated: " + ", ".join(f"`{k}`" for k in option.deprecated_keys()) + ")"
            parts.append(f"| {key} | {option.type_name()} | {_cell(_default(option))} | "
                         f"{_cell(option.expected())} | {_cell(option.description())} |")
    return "\n".join(parts) + "\n"


if __name__ == "__main__":
    print(render_markdown(), end="")
