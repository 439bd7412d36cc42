"""The name an object gives itself, read from its headers (pure: no Django, no symbolic, which
does not expose it): an ELF shared library's SONAME (`DT_SONAME` of its dynamic section), a
Mach-O dylib's install name (`LC_ID_DYLIB`, `@rpath/libchat.dylib` → `libchat.dylib`). That is
the name a loader, and so a monitor, gives the image; executables carry none.

Only the headers are read, never the whole file; anything malformed is no name (""). And which
kind of debug file an image needs, from its name and the app's platform (`debug_file_kind`).
"""

from __future__ import annotations

import re
import struct
from pathlib import PurePosixPath
from typing import BinaryIO

ELF_MAGIC = b"\x7fELF"
SHT_DYNAMIC, DT_NULL, DT_SONAME = 6, 0, 14
LC_ID_DYLIB = 0xD
MAX_TABLE = 1 << 20  # bytes of section headers or load commands read at most
MAX_NAME = 4096


def own_name(path: str, kind: str) -> str:
    """The object's own name (its file name part), "" when it carries none."""
    try:
        with open(path, "rb") as stream:
            if kind == "elf":
                return _base(elf_soname(stream))
            if kind == "macho":
                return _base(macho_install_name(stream))
    except (OSError, struct.error, ValueError, UnicodeDecodeError):
        return ""
    return ""


ELF_PLATFORMS = frozenset({"android", "linux"})
_ELF_NAME = re.compile(r"\.(?:so(?:\.\d+)*|elf)$")
_MACHO_NAME = re.compile(r"\.(?:dylib|framework|app|bundle|appex)$")


def debug_file_kind(image_name: str, platform: str) -> str:
    """Which debug file an image needs: "elf" (the unstripped ELF, or its Breakpad .sym) or
    "dsym" (a Mach-O's dSYM), by its name (`libchat.so`, `libchat.so.1`: ELF; `libchat.dylib`:
    Mach-O), else by the app's platform (Android and Linux load ELF, Apple platforms Mach-O)."""
    name = image_name.strip().lower()
    if _ELF_NAME.search(name):
        return "elf"
    if _MACHO_NAME.search(name):
        return "dsym"
    return "elf" if platform in ELF_PLATFORMS else "dsym"


def _base(name: str) -> str:
    return PurePosixPath(name).name if name else ""


def _read(stream: BinaryIO, offset: int, size: int) -> bytes:
    if offset < 0 or size < 0 or size > MAX_TABLE:
        raise ValueError("out of bounds")
    stream.seek(offset)
    data = stream.read(size)
    if len(data) != size:
        raise ValueError("truncated")
    return data


def _c_string(stream: BinaryIO, offset: int) -> str:
    stream.seek(offset)
    raw = stream.read(MAX_NAME)
    end = raw.find(b"\0")
    return (raw if end < 0 else raw[:end]).decode("utf-8")


def elf_soname(stream: BinaryIO) -> str:
    """DT_SONAME, found through the section headers (`.dynamic` and the string table it links)."""
    ident = _read(stream, 0, 16)
    if ident[:4] != ELF_MAGIC or ident[4] not in (1, 2) or ident[5] not in (1, 2):
        return ""
    wide, order = ident[4] == 2, "<" if ident[5] == 1 else ">"
    header = _read(stream, 16, 48 if wide else 36)
    if wide:
        shoff, shentsize, shnum = struct.unpack_from(f"{order}24xQ10xHH", header)
        section = f"{order}IIQQQQIIQQ"
    else:
        shoff, shentsize, shnum = struct.unpack_from(f"{order}16xI10xHH", header)
        section = f"{order}IIIIIIIIII"
    if not shoff or shentsize < struct.calcsize(section):
        return ""
    table = _read(stream, shoff, shentsize * shnum)
    sections = [struct.unpack_from(section, table, i * shentsize) for i in range(shnum)]
    for _, kind, _, _, offset, size, link, _, _, entsize in sections:
        if kind != SHT_DYNAMIC or not entsize or link >= len(sections):
            continue
        strings = sections[link][4]  # sh_offset of the linked string table
        entries = _read(stream, offset, size)
        entry = f"{order}qQ" if wide else f"{order}iI"
        for start in range(0, size - entsize + 1, entsize):
            tag, value = struct.unpack_from(entry, entries, start)
            if tag == DT_NULL:
                break
            if tag == DT_SONAME:
                return _c_string(stream, strings + value)
    return ""


def macho_install_name(stream: BinaryIO) -> str:
    """LC_ID_DYLIB's name, of a thin Mach-O or of the first slice of a fat one."""
    base = 0
    magic = _read(stream, 0, 4)
    if magic in (b"\xca\xfe\xba\xbe", b"\xca\xfe\xba\xbf"):  # fat: big-endian headers
        count = struct.unpack(">I", _read(stream, 4, 4))[0]
        if not count:
            return ""
        if magic == b"\xca\xfe\xba\xbe":
            base = struct.unpack(">8xI", _read(stream, 8, 12))[0]
        else:
            base = struct.unpack(">8xQ", _read(stream, 8, 16))[0]
        magic = _read(stream, base, 4)
    orders = {b"\xce\xfa\xed\xfe": "<", b"\xcf\xfa\xed\xfe": "<",
              b"\xfe\xed\xfa\xce": ">", b"\xfe\xed\xfa\xcf": ">"}  # fmt: skip
    order = orders.get(magic)
    if order is None:
        return ""
    wide = magic in (b"\xcf\xfa\xed\xfe", b"\xfe\xed\xfa\xcf")
    ncmds, sizeofcmds = struct.unpack(f"{order}16xII", _read(stream, base, 24))
    commands = _read(stream, base + (32 if wide else 28), sizeofcmds)
    at = 0
    for _ in range(ncmds):
        cmd, size = struct.unpack_from(f"{order}II", commands, at)
        if cmd == LC_ID_DYLIB:
            name_at = struct.unpack_from(f"{order}I", commands, at + 8)[0]
            name = commands[at + name_at : at + size]
            return name.split(b"\0", 1)[0].decode("utf-8")
        if size < 8:
            return ""
        at += size
    return ""
