"""Units as Instruments prints them: bytes in binary units, times since launch (pure: no Django)."""

from __future__ import annotations

KIB, MIB, GIB = 1024, 1024**2, 1024**3


def format_bytes(n: int | float) -> str:
    """Bytes as Instruments shows them: `512 Bytes`, `1.50 KiB`, `2.00 MiB`, `1.25 GiB`."""
    sign = "-" if n < 0 else ""
    n = abs(n)
    if n < KIB:
        return f"{sign}{int(n)} Bytes"
    if n < MIB:
        return f"{sign}{n / KIB:.2f} KiB"
    if n < GIB:
        return f"{sign}{n / MIB:.2f} MiB"
    return f"{sign}{n / GIB:.2f} GiB"


def format_ms(at_ms: int | None) -> str:
    """Time since launch as Instruments prints it: `00:05.320`; empty when unknown."""
    if at_ms is None:
        return ""
    minutes, ms = divmod(int(at_ms), 60_000)
    return f"{minutes:02d}:{ms // 1000:02d}.{ms % 1000:03d}"
