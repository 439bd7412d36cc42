"""Progress of a command's work on a terminal, and in a log (CI)."""

from __future__ import annotations

import os
import time
from typing import TextIO


def process_age() -> float:
    """Seconds since this process started (Linux's /proc; 0.0 where there is none), so that the
    interpreter's and Django's start-up show as a phase of their own."""
    try:
        with open("/proc/self/stat") as stat, open("/proc/uptime") as uptime:
            started_ticks = int(stat.read().rsplit(")", 1)[1].split()[19])
            now = float(uptime.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0.0
    return max(0.0, now - started_ticks / os.sysconf("SC_CLK_TCK"))


class TerminalProgress:
    """One line per file, rewritten in place: phase, a bar and the elapsed time. With
    `since_start`, the time counts from the process's start, shown as the phase `start`: the
    phases then add up to what the user waited for."""

    def __init__(self, stream: TextIO, name: str, since_start: bool = False) -> None:
        self.stream, self.name, self.started = stream, name, time.monotonic()
        self.interactive = stream.isatty()
        if since_start:
            self.started -= process_age()
            self._write("start", 0.0, 0.0)

    def __call__(self, phase: str, fraction: float) -> None:
        self._write(phase, fraction, time.monotonic() - self.started)

    def _write(self, phase: str, fraction: float, elapsed: float) -> None:
        bar = "#" * int(fraction * 20)
        line = f"{self.name}: {phase:<9} [{bar:<20}] {elapsed:6.1f}s"
        if self.interactive:
            self.stream.write("\r" + line)
        elif fraction in (0.0, 1.0):
            self.stream.write(line + "\n")
        self.stream.flush()
