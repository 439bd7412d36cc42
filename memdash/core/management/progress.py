"""Progress of a command's work on a terminal, and in a log (CI)."""

from __future__ import annotations

import time
from typing import TextIO


class TerminalProgress:
    """One line per file, rewritten in place: phase, a bar and the elapsed time."""

    def __init__(self, stream: TextIO, name: str) -> None:
        self.stream, self.name, self.started = stream, name, time.monotonic()
        self.interactive = stream.isatty()

    def __call__(self, phase: str, fraction: float) -> None:
        bar = "#" * int(fraction * 20)
        line = f"{self.name}: {phase:<9} [{bar:<20}] {time.monotonic() - self.started:6.1f}s"
        if self.interactive:
            self.stream.write("\r" + line)
        elif fraction in (0.0, 1.0):
            self.stream.write(line + "\n")
        self.stream.flush()
