"""How sizes read everywhere (editor, charts, tooltips, generated code): one formatter."""

from __future__ import annotations

#: Binary units, smallest first, as the inspector offers them.
BYTE_UNITS: tuple[tuple[str, int], ...] = (
    ("B", 1),
    ("KiB", 1 << 10),
    ("MiB", 1 << 20),
    ("GiB", 1 << 30),
    ("TiB", 1 << 40),
)


def best_unit(nbytes: int) -> tuple[float, str]:
    """``nbytes`` as (value, unit) in the largest unit that keeps the value >= 1."""
    value, unit = float(nbytes), "B"
    for name, size in BYTE_UNITS:
        if nbytes >= size:
            value, unit = nbytes / size, name
    return value, unit


def format_bytes(nbytes: int) -> str:
    """``64 MiB``, ``1.5 GiB``, ``393.4 MiB``, ``512 B`` (four significant digits)."""
    value, unit = best_unit(nbytes)
    return f"{value:.4g} {unit}"
