"""What the MetricKit and ApplicationExitInfo parsers share: memdash's wrapper around the
platform's JSON (`format`, `version`, `app`, `build`, `device`), the build and device an upload
names (the wrapper's, else the upload's fields), and the list of keys a payload held that
memdash does not read (stored with the upload, never a reason to refuse it)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from memdash.core.logic.errors import InvalidUpload
from memdash.core.writes.uploads import UploadMeta, check_app
from memdash.ingest.logic.monitor_common import type_name

MAX_BUILD_FIELD = 64
MAX_DEVICE_ID = 255
MAX_MODEL = 128
MAX_UNREAD = 100  # paths listed; more are counted
_INDEX = re.compile(r"\[\d+\]")


@dataclass
class Unread:
    """Paths of keys memdash does not read, with list indexes folded (`[*].foo` once for a
    thousand exits)."""

    paths: list[str] = field(default_factory=list)
    more: int = 0

    def add(self, path: str) -> None:
        folded = _INDEX.sub("[*]", path)
        if folded in self.paths:
            return
        if len(self.paths) < MAX_UNREAD:
            self.paths.append(folded)
        else:
            self.more += 1

    def unknown_keys(self, obj: dict[str, Any], known: frozenset[str], path: str) -> None:
        for key in obj:
            if key not in known:
                self.add(f"{path}.{key}" if path else key)

    def listed(self) -> list[str]:
        return [*self.paths, *([f"… and {self.more} more"] if self.more else [])]


@dataclass(frozen=True)
class UploadSide:
    """The build and device an upload names beside its payloads: the wrapper's `build` and
    `device`, else the upload's fields (`build_version`, `device_id`, …)."""

    build_version: str = ""
    build_number: str = ""
    build_commit: str = ""
    device_id: str = ""
    device_model: str = ""
    device_os: str = ""


WRAPPER_KEYS = frozenset({"format", "version", "app", "build", "device"})


def read_wrapper(
    doc: dict[str, Any], fmt: str, items_key: str, meta: UploadMeta, unread: Unread
) -> tuple[list[Any], UploadSide]:
    """The wrapper's list of platform documents and what it says beside them; checks its
    format, version and app (403 for another app's)."""
    if doc.get("format") != fmt:
        raise InvalidUpload(f"must be {fmt!r}", "format")
    version = doc.get("version")
    if type(version) is not int or version != 1:
        raise InvalidUpload(f"unsupported version {version!r}; supported: 1", "version")
    check_app(doc.get("app"), meta)
    items = doc.get(items_key)
    if not isinstance(items, list):
        raise InvalidUpload(f"must be a list, got {type_name(items)}", items_key)
    unread.unknown_keys(doc, WRAPPER_KEYS | {items_key}, "")
    build = _optional_object(doc, "build")
    device = _optional_object(doc, "device")
    side = UploadSide(
        build_version=_string(build, "version", "build.version", MAX_BUILD_FIELD),
        build_number=_string(build, "number", "build.number", MAX_BUILD_FIELD),
        build_commit=_string(build, "commit", "build.commit", MAX_BUILD_FIELD),
        device_id=_string(device, "id", "device.id", MAX_DEVICE_ID),
        device_model=_string(device, "model", "device.model", MAX_MODEL),
        device_os=_string(device, "os", "device.os", MAX_MODEL),
    )
    # What the wrapper leaves out, the upload's fields may say.
    return items, fill_from_meta(side, meta)


def fill_from_meta(side: UploadSide, meta: UploadMeta) -> UploadSide:
    return UploadSide(
        build_version=side.build_version or meta.build_version,
        build_number=side.build_number or (meta.build_number if not side.build_version else ""),
        build_commit=side.build_commit or meta.build_commit,
        device_id=side.device_id or meta.device_id,
        device_model=side.device_model or meta.device_model,
        device_os=side.device_os or meta.os,
    )


def _optional_object(doc: dict[str, Any], key: str) -> dict[str, Any]:
    value = doc.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidUpload(f"must be an object, got {type_name(value)}", key)
    return value


def _string(obj: dict[str, Any], key: str, path: str, max_length: int) -> str:
    value = obj.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InvalidUpload(f"must be a string, got {type_name(value)}", path)
    return bounded(value, path, max_length)


def bounded(value: str, path: str, max_length: int) -> str:
    if "\x00" in value:  # PostgreSQL text cannot hold it
        raise InvalidUpload("must not contain NUL characters", path)
    if len(value) > max_length:
        raise InvalidUpload(f"must be at most {max_length} characters, got {len(value)}", path)
    return value


def join(path: str, key: str) -> str:
    """`payloads[2]` + `metaData` -> `payloads[2].metaData`; '' + `metaData` -> `metaData`."""
    return f"{path}.{key}" if path else key
