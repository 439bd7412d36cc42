"""The committed debug files of tests/data/symbols and what llvm-symbolizer says about them."""

from __future__ import annotations

import json
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data" / "symbols"
ELF = DATA / "chat_cache.elf"
SYMTAB_ELF = DATA / "chat_cache.symtab.elf"
MACHO_OBJECT = DATA / "chat_cache.arm64.o"
DSYM_ZIP = DATA / "libchat_cache.dylib.dSYM.zip"
BREAKPAD = DATA / "chat_cache.handwritten.sym"
EXPECTED = json.loads((DATA / "expected.json").read_text())["objects"]
ELF_DEBUG_ID = "8fb83f1e-b03e-ba1d-1f81-cdf2f040a42c"
ELF_BUILD_ID = "1e3fb88f3eb01dba1f81cdf2f040a42c6a0111d3"
DSYM_ARM64_UUID = "4C4C447E-5555-3144-A181-4347F75E0997"


def symbolizer_frames(obj: str, offset: int) -> list[tuple[str, str, int | None]]:
    """(function, file, line) at `offset`, outermost first, as llvm-symbolizer said (`??`, its
    answer for nothing known, is no frame)."""
    frames = EXPECTED[obj][hex(offset)]
    return [
        (f["function"], f["file"] if f["file"] != "??" else "", f["line"] or None)
        for f in reversed(frames)
        if f["function"] not in ("??", "")
    ]
