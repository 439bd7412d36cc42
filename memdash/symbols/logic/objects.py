"""What an upload of debug files holds: the objects in it, read with Sentry's `symbolic`.

No Django here. An upload is one file (a Mach-O, fat or thin, an ELF, a Breakpad .sym, or a zip
of any of those, such as a zipped .dSYM bundle) or, from the command line, a folder (a .dSYM
bundle). Files are recognised by their first bytes, so a dSYM's Info.plist is passed over, and
each object is checked by building its symcache here, before anything is stored: a corrupt or
truncated object refuses the whole upload.

Zips are unpacked to a scratch folder member by member, counting the bytes actually written
(never the sizes the zip declares), so a zip bomb stops at the limit, and a member whose name
leaves the folder (`../`, an absolute path, a link) refuses the upload.
"""

from __future__ import annotations

import os
import stat
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import symbolic

from memdash.core.logic.errors import InvalidUpload, TooLarge
from memdash.symbols.logic.names import own_name

CHUNK = 1024 * 1024
MAX_ZIP_MEMBERS = 100_000
MACHO_MAGICS = {
    b"\xfe\xed\xfa\xce", b"\xce\xfa\xed\xfe", b"\xfe\xed\xfa\xcf", b"\xcf\xfa\xed\xfe",
    b"\xca\xfe\xba\xbe", b"\xbe\xba\xfe\xca",
}  # fmt: skip
ELF_MAGIC = b"\x7fELF"
BREAKPAD_MAGIC = b"MODULE "
ZIP_MAGIC = b"PK\x03\x04"
EMPTY_ZIP_MAGIC = b"PK\x05\x06"
# (phase, fraction done 0..1), as memdash.core.writes.uploads.Progress: "unzip" (members written),
# "check" (files looked at), and `checked <file> (<arch>)` once an object's symcache is built.
Step = Callable[[str, float], None]


def quiet(phase: str, fraction: float) -> None:
    pass


@dataclass
class FoundObject:
    """One object of an upload, checked: its symcache is already written to `symcache`."""

    debug_id: str
    code_id: str
    arch: str
    kind: str  # dsym | macho | elf | breakpad
    features: list[str]
    image_name: str
    file_name: str  # where it was in the upload
    source: Path  # the file that holds it (shared by the slices of a fat Mach-O)
    symcache: Path


@dataclass
class Inventory:
    objects: list[FoundObject] = field(default_factory=list)
    files_seen: int = 0


def file_kind(head: bytes) -> str | None:
    """macho | elf | breakpad | zip from a file's first bytes, None for anything else."""
    if head[:4] in MACHO_MAGICS:
        return "macho"
    if head.startswith(ELF_MAGIC):
        return "elf"
    if head.startswith(BREAKPAD_MAGIC):
        return "breakpad"
    if head.startswith((ZIP_MAGIC, EMPTY_ZIP_MAGIC)):
        return "zip"
    return None


def describe(head: bytes) -> str:
    """What a file that is no debug file looks like, to say so in the refusal."""
    if not head:
        return "an empty file"
    if head.startswith(b"\x1f\x8b"):
        return "a gzip stream (upload the .zip of the dSYM, or the file itself)"
    if head.startswith(b"%PDF"):
        return "a PDF document"
    if head.startswith(b"\x89PNG"):
        return "a PNG image"
    if head.startswith(b"bplist") or head.lstrip().startswith(b"<?xml"):
        return "a property list or XML document"
    stripped = head.lstrip()
    if stripped[:1] in (b"{", b"["):
        return "a JSON document (snapshots and reports go to /api/v1/uploads)"
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        return f"binary data starting with {head[:4].hex(' ')}"
    first = text.splitlines()[0][:40] if text.strip() else ""
    return f"text starting with {first!r}"


def read_head(path: Path, size: int = 16) -> bytes:
    with open(path, "rb") as stream:
        return stream.read(size)


def _member_path(dest: Path, name: str) -> Path:
    """Where a zip member goes, refusing names that would leave `dest`."""
    pure = PurePosixPath(name.replace("\\", "/"))
    if pure.is_absolute() or ".." in pure.parts or (pure.parts and ":" in pure.parts[0]):
        raise InvalidUpload(f"the zip member {name!r} points outside the archive", name)
    target = (dest / pure).resolve()
    if not target.is_relative_to(dest.resolve()):
        raise InvalidUpload(f"the zip member {name!r} points outside the archive", name)
    return target


def extract_zip(archive: Path, dest: Path, limit: int, progress: Step = quiet) -> int:
    """Unpack `archive` into `dest`; returns the bytes written. TooLarge past `limit` bytes out
    (counted while writing), InvalidUpload for a corrupt zip or a member leaving `dest`."""
    written = 0
    try:
        with zipfile.ZipFile(archive) as zipped:
            members = zipped.infolist()
            if len(members) > MAX_ZIP_MEMBERS:
                raise InvalidUpload(f"the zip has {len(members)} members, more than "
                                    f"{MAX_ZIP_MEMBERS}")  # fmt: skip
            for done, member in enumerate(members):
                progress("unzip", done / len(members))
                target = _member_path(dest, member.filename)
                if stat.S_ISLNK(member.external_attr >> 16):
                    raise InvalidUpload(
                        f"the zip member {member.filename!r} is a symbolic link", member.filename
                    )
                if member.is_dir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                with zipped.open(member) as source, open(target, "wb") as out:
                    while chunk := source.read(CHUNK):
                        written += len(chunk)
                        if written > limit:
                            raise TooLarge(
                                f"the zip unpacks to more than the limit of {limit} bytes",
                                member.filename,
                            )
                        out.write(chunk)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, NotImplementedError) as exc:
        raise InvalidUpload(f"the zip cannot be read: {exc}") from None
    progress("unzip", 1.0)
    return written


def walk_files(root: Path) -> Iterator[Path]:
    """Regular files under `root` (or `root` itself), in a stable order, never following links."""
    if root.is_file():
        yield root
        return
    for folder, dirs, files in os.walk(root, followlinks=False):
        dirs.sort()
        for name in sorted(files):
            path = Path(folder) / name
            if path.is_file() and not path.is_symlink():
                yield path


def breakpad_module_name(path: Path) -> str:
    """The module name of a Breakpad .sym: the last field of its `MODULE os arch id name` line."""
    with open(path, "rb") as stream:
        line = stream.readline(4096).decode("utf-8", "replace").strip()
    parts = line.split(" ", 4)
    return parts[4] if len(parts) == 5 else ""


def image_name_of(path: Path, root: Path, kind: str, fallback: str) -> str:
    """The image frames of this object name: a dSYM names it after its DWARF file
    (`Chat.app.dSYM/Contents/Resources/DWARF/Chat` → `Chat`), a .sym in its MODULE line. A
    single file uploaded is named as it was uploaded (`?filename=`, `--name`), else by its own
    name: an ELF library's SONAME, a dylib's install name ("" for an executable)."""
    if kind == "breakpad":
        return breakpad_module_name(path) or fallback or path.name
    if path == root:
        return fallback or own_name(str(path), kind)
    return path.name


def _object_kind(kind: str, path: Path, obj: symbolic.Object) -> str:
    if kind == "macho" and (obj.kind == "dbg" or ".dSYM" in str(path)):
        return "dsym"
    return kind


def _symbolic_error(exc: Exception, kind: str, name: str) -> InvalidUpload:
    detail = " ".join(str(exc).split())
    label = {"macho": "Mach-O", "elf": "ELF", "breakpad": "Breakpad .sym"}.get(kind, kind)
    return InvalidUpload(f"a corrupt or truncated {label} file: {detail}", name)


def _no_debug_id(obj: symbolic.Object, display: str) -> InvalidUpload:
    """Why an object without a debug id cannot be kept. A relocatable object (`clang -c`'s .o)
    never has one: the linker writes the UUID (LC_UUID) or build id into the binary it links,
    which is what a device reports, so Apple's tools and memdash match the linked binary or its
    dSYM, never a .o."""
    if obj.kind == "rel":
        return InvalidUpload(
            f"{display} is an object file ({obj.arch}, as `clang -c` writes): an object file has "
            "no UUID (no LC_UUID or build id; the linker adds it to the binary), so no frame "
            "can be matched to it. Upload the linked binary or its dSYM (Xcode: the .dSYM of "
            "the app or framework; `dsymutil <binary>` makes one)",
            display,
        )
    return InvalidUpload(
        f"the {obj.arch} object has no debug id (no LC_UUID or build id): frames cannot be "
        "matched to it; upload the linked binary or its dSYM",
        display,
    )


def read_objects(
    path: Path, root: Path, display: str, kind: str, fallback_name: str, scratch: Path,
    progress: Step = quiet,
) -> list[FoundObject]:  # fmt: skip
    """Every object of one file, each with its symcache written under `scratch`."""
    found = []
    try:
        archive = symbolic.Archive.open(str(path))
        for obj in archive.iter_objects():
            debug_id = obj.debug_id or ""
            if not debug_id or set(debug_id.replace("-", "")) == {"0"}:
                raise _no_debug_id(obj, display)
            symcache = scratch / f"{debug_id}-{obj.arch}.symcache"
            with open(symcache, "wb") as out:
                obj.make_symcache().dump_into(out)
            progress(f"checked {display} ({obj.arch})", 1.0)
            found.append(
                FoundObject(
                    debug_id=debug_id,
                    code_id=obj.code_id or "",
                    arch=obj.arch,
                    kind=_object_kind(kind, path, obj),
                    features=sorted(obj.features),
                    image_name=image_name_of(path, root, kind, fallback_name) or debug_id,
                    file_name=display,
                    source=path,
                    symcache=symcache,
                )
            )
    except symbolic.SymbolicError as exc:
        raise _symbolic_error(exc, kind, display) from None
    if not found:
        raise InvalidUpload(f"the {kind} file holds no object", display)
    return found


def inventory(
    root: Path, scratch: Path, fallback_name: str = "", progress: Step = quiet
) -> Inventory:
    """The objects of a file or folder (zips already unpacked into it). `fallback_name` names
    the image of a single uploaded file that carries no name of its own."""
    result = Inventory()
    files = list(walk_files(root))
    progress("check", 0.0)
    for path in files:
        result.files_seen += 1
        kind = file_kind(read_head(path))
        if kind not in (None, "zip"):
            display = path.name if path == root else str(path.relative_to(root))
            result.objects += read_objects(
                path, root, display, kind, fallback_name, scratch, progress
            )
        progress("check", result.files_seen / len(files))
    return result
