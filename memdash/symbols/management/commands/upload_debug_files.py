"""python manage.py upload_debug_files PATH... (--key KEY | --app ID): the command-line door for
debug files. A PATH is a .dSYM bundle (a folder), a zip of one, a Mach-O or ELF file, or a
Breakpad .sym; progress goes to the terminal: on a terminal one line per path, rewritten in
place; in a log (CI) a line per step: bytes read, the zip unpacked, files looked at, each object
checked (its symcache built) and stored."""

from __future__ import annotations

import sys
import time
from argparse import ArgumentParser
from pathlib import Path
from typing import Any, TextIO

from django.core.management.base import BaseCommand, CommandError

from memdash.core.logic.errors import UploadRefused
from memdash.core.logic.reading import read_chunks
from memdash.core.management.arguments import app_and_key
from memdash.core.management.progress import TerminalProgress
from memdash.symbols import writes as symbols
from memdash.symbols.web.upload import receive_debug_files


class StepProgress(TerminalProgress):
    """As TerminalProgress on a terminal; in a log, a line each time a phase starts, passes a
    quarter or ends, and one per object checked (each its own phase)."""

    def __init__(self, stream: TextIO, name: str) -> None:
        super().__init__(stream, name)
        self.last: tuple[str, int] = ("", -1)

    def __call__(self, phase: str, fraction: float) -> None:
        if self.interactive:
            super().__call__(phase, fraction)
            return
        step = (phase, int(fraction * 4))
        if step == self.last:
            return
        self.last = step
        elapsed = time.monotonic() - self.started
        self.stream.write(f"{self.name}: {phase} {fraction:4.0%} {elapsed:6.1f}s\n")
        self.stream.flush()


class Command(BaseCommand):
    help = (
        "Upload debug files (dSYM bundles or zips, Mach-O, ELF, Breakpad .sym), showing progress."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("paths", nargs="+")
        who = parser.add_mutually_exclusive_group(required=True)
        who.add_argument("--key", help="an ingest key (the files go to its app)")
        who.add_argument("--app", help="app id (number) or bundle id")
        parser.add_argument("--platform", help="with a bundle id naming several apps")
        parser.add_argument("--name", default="", help="the image name of a lone Mach-O or ELF")

    def handle(self, *args: Any, **options: Any) -> None:
        app, key = app_and_key(options)
        failed = 0
        for name in options["paths"]:
            path = Path(name)
            progress = StepProgress(sys.stderr, name)
            try:
                if path.is_dir():  # a .dSYM bundle: read in place, nothing to stream
                    result = symbols.store_debug_files(
                        app, path, image_name=options["name"], key=key, progress=progress
                    )
                else:
                    with open(path, "rb") as stream:
                        result = receive_debug_files(
                            app, read_chunks(stream), file_name=path.name,
                            image_name=options["name"], key=key,
                            size=path.stat().st_size, progress=progress,
                        )  # fmt: skip
            except OSError as exc:
                raise CommandError(f"{name}: {exc}") from None
            except UploadRefused as exc:
                failed += 1
                self.stderr.write(f"{name}: refused: {exc}")
                continue
            sys.stderr.write("\n" if sys.stderr.isatty() else "")
            for stored in result.objects:
                f = stored.debug_file
                self.stdout.write(
                    f"{name}: {f.image_name} {f.arch} {f.debug_id} ({f.kind}): {stored.outcome}"
                )
            if result.job is not None:
                job = result.job
                self.stdout.write(
                    f"{name}: symbolication {job.state}: {job.frames_named} frames named in "
                    f"{job.snapshots_done} of {job.snapshots_total} snapshots"
                )
        if failed:
            raise CommandError(f"{failed} of {len(options['paths'])} paths were not uploaded")
