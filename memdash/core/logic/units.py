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


def malloc_category(size: int) -> str:
    """Instruments' name for heap blocks of one exact size, in the units it prints them:
    `Malloc 48 Bytes`, `Malloc 1.50 KiB`, `Malloc 2.00 MiB`, `Malloc 1.00 GiB`. The unit is
    chosen by the exact size, so 1 MiB - 1 bytes is `Malloc 1024.00 KiB`, apart from 1 MiB."""
    return f"Malloc {format_bytes(size)}"


def format_ms(at_ms: int | None) -> str:
    """Time since launch as Instruments prints it: `00:05.320`; empty when unknown."""
    if at_ms is None:
        return ""
    minutes, ms = divmod(int(at_ms), 60_000)
    return f"{minutes:02d}:{ms // 1000:02d}.{ms % 1000:03d}"


def format_duration(ms: int | float | None) -> str:
    """A duration in milliseconds as people read it: `780 ms`, `1.5 s`, `41 s`, `17 min 41 s`,
    `2 h 5 min`, `3 d 4 h` (two units at most, the smaller one cut, not rounded); empty when
    unknown."""
    if ms is None:
        return ""
    sign = "-" if ms < 0 else ""
    ms = abs(ms)
    if ms < 1000:
        return f"{sign}{int(ms)} ms"
    if ms < 10_000:
        return f"{sign}{int(ms / 100) / 10:g} s"
    seconds = int(ms // 1000)
    for big, big_name, small, small_name in (
        (86_400, "d", 3600, "h"),
        (3600, "h", 60, "min"),
        (60, "min", 1, "s"),
    ):
        if seconds >= big:
            whole, rest = divmod(seconds, big)
            part = rest // small
            return f"{sign}{whole} {big_name}" + (f" {part} {small_name}" if part else "")
    return f"{sign}{seconds} s"
