"""A small field-by-field protobuf reader for pprof's profile.proto (no protoc, no generated code).

Profiles are decoded by `pprof_columns` (protobuf's compiled parser and numpy); this reader
sniffs an upload's first bytes (`looks_like_profile`) and, when the compiled parser refuses a
profile without saying where, reads it again to name the place: its errors carry the path of the
offending message (`sample[3].location_id`) so that an upload is refused with something a
person can act on. Only the messages and fields a heap profile needs are read; every other field
is skipped, as protobuf readers must. Repeated scalars are accepted both packed and unpacked,
since producers differ.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

VARINT, FIXED64, LENGTH, START_GROUP, END_GROUP, FIXED32 = 0, 1, 2, 3, 4, 5
_MAX_VARINT_BYTES = 10
TRUNCATED_VARINT = "truncated varint"


class ProtoError(ValueError):
    def __init__(self, message: str, path: str):
        super().__init__(message)
        self.message = message
        self.path = path


def read_varint(buf: bytes | memoryview, pos: int, path: str) -> tuple[int, int]:
    """(value, next position) of the base-128 varint at `pos`."""
    value = 0
    for shift_index in range(_MAX_VARINT_BYTES):
        if pos >= len(buf):
            raise ProtoError(TRUNCATED_VARINT, path)
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << (7 * shift_index)
        if not byte & 0x80:
            return value, pos
    raise ProtoError("varint longer than 10 bytes", path)


def as_int64(value: int) -> int:
    """A varint read as protobuf int64: two's complement over 64 bits."""
    value &= (1 << 64) - 1
    return value - (1 << 64) if value >= 1 << 63 else value


def iter_fields(buf: bytes | memoryview, path: str) -> Iterator[tuple[int, int, int | memoryview]]:
    """(field number, wire type, value) of each field of one message; length-delimited values
    are memoryviews into `buf`, fixed-width values integers."""
    view = memoryview(buf)
    pos = 0
    end = len(view)
    while pos < end:
        key, pos = read_varint(view, pos, path)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise ProtoError("field number 0", path)
        if wire == VARINT:
            value, pos = read_varint(view, pos, path)
            yield number, wire, value
        elif wire == LENGTH:
            length, pos = read_varint(view, pos, path)
            if pos + length > end:
                raise ProtoError(f"field {number} runs past the end of its message", path)
            yield number, wire, view[pos : pos + length]
            pos += length
        elif wire == FIXED64:
            if pos + 8 > end:
                raise ProtoError("truncated fixed64", path)
            yield number, wire, int.from_bytes(view[pos : pos + 8], "little")
            pos += 8
        elif wire == FIXED32:
            if pos + 4 > end:
                raise ProtoError("truncated fixed32", path)
            yield number, wire, int.from_bytes(view[pos : pos + 4], "little")
            pos += 4
        else:
            # Groups (3, 4) are not used by profile.proto; anything else is not protobuf.
            raise ProtoError(f"unsupported wire type {wire} for field {number}", path)


def _scalar(wire: int, value: int | memoryview, path: str) -> int:
    if wire == LENGTH or not isinstance(value, int):
        raise ProtoError("expected a number, found a length-delimited field", path)
    return value


def _message(wire: int, value: int | memoryview, path: str) -> memoryview:
    if wire != LENGTH or isinstance(value, int):
        raise ProtoError("expected a message, found a number", path)
    return value


def _repeated_uints(wire: int, value: int | memoryview, path: str) -> list[int]:
    """A repeated integer field occurrence: packed (one LENGTH run of varints) or one varint."""
    if wire == VARINT:
        return [value]  # type: ignore[list-item]
    packed = _message(wire, value, path)
    values = []
    pos = 0
    while pos < len(packed):
        item, pos = read_varint(packed, pos, path)
        values.append(item)
    return values


@dataclass
class Label:
    key: int
    str_index: int = 0
    num: int = 0
    num_unit: int = 0


@dataclass
class Sample:
    location_ids: list[int] = field(default_factory=list)  # leaf first
    values: list[int] = field(default_factory=list)
    labels: list[Label] = field(default_factory=list)


@dataclass
class Mapping:
    id: int = 0
    memory_start: int = 0
    memory_limit: int = 0
    file_offset: int = 0
    filename: int = 0
    build_id: int = 0


@dataclass
class Line:
    function_id: int = 0
    line: int = 0


@dataclass
class Location:
    id: int = 0
    mapping_id: int = 0
    address: int = 0
    lines: list[Line] = field(default_factory=list)  # innermost inlined function first


@dataclass
class Function:
    id: int = 0
    name: int = 0
    system_name: int = 0
    filename: int = 0


@dataclass
class Profile:
    sample_types: list[tuple[int, int]] = field(default_factory=list)  # (type, unit) string indices
    samples: list[Sample] = field(default_factory=list)
    mappings: list[Mapping] = field(default_factory=list)
    locations: list[Location] = field(default_factory=list)
    functions: list[Function] = field(default_factory=list)
    strings: list[str] = field(default_factory=list)
    time_nanos: int = 0
    duration_nanos: int = 0
    period: int = 0
    period_type: tuple[int, int] = (0, 0)
    comments: list[int] = field(default_factory=list)  # string indices

    def string(self, index: int, path: str) -> str:
        if not 0 <= index < len(self.strings):
            raise ProtoError(
                f"string index {index} is outside string_table ({len(self.strings)} strings)", path
            )
        return self.strings[index]


def _value_type(buf: memoryview, path: str) -> tuple[int, int]:
    type_index = unit_index = 0
    for number, wire, value in iter_fields(buf, path):
        if number == 1:
            type_index = _scalar(wire, value, f"{path}.type")
        elif number == 2:
            unit_index = _scalar(wire, value, f"{path}.unit")
    return type_index, unit_index


def _label(buf: memoryview, path: str) -> Label:
    label = Label(key=0)
    for number, wire, value in iter_fields(buf, path):
        if number == 1:
            label.key = _scalar(wire, value, f"{path}.key")
        elif number == 2:
            label.str_index = _scalar(wire, value, f"{path}.str")
        elif number == 3:
            label.num = as_int64(_scalar(wire, value, f"{path}.num"))
        elif number == 4:
            label.num_unit = _scalar(wire, value, f"{path}.num_unit")
    return label


def _sample(buf: memoryview, path: str) -> Sample:
    sample = Sample()
    for number, wire, value in iter_fields(buf, path):
        if number == 1:
            sample.location_ids.extend(_repeated_uints(wire, value, f"{path}.location_id"))
        elif number == 2:
            raw_values = _repeated_uints(wire, value, f"{path}.value")
            sample.values.extend(as_int64(v) for v in raw_values)
        elif number == 3:
            label_path = f"{path}.label[{len(sample.labels)}]"
            sample.labels.append(_label(_message(wire, value, label_path), label_path))
    return sample


def _mapping(buf: memoryview, path: str) -> Mapping:
    mapping = Mapping()
    names = {
        1: "id",
        2: "memory_start",
        3: "memory_limit",
        4: "file_offset",
        5: "filename",
        6: "build_id",
    }
    for number, wire, value in iter_fields(buf, path):
        if number in names:
            setattr(mapping, names[number], _scalar(wire, value, f"{path}.{names[number]}"))
    return mapping


def _line(buf: memoryview, path: str) -> Line:
    line = Line()
    for number, wire, value in iter_fields(buf, path):
        if number == 1:
            line.function_id = _scalar(wire, value, f"{path}.function_id")
        elif number == 2:
            line.line = as_int64(_scalar(wire, value, f"{path}.line"))
    return line


def _location(buf: memoryview, path: str) -> Location:
    location = Location()
    for number, wire, value in iter_fields(buf, path):
        if number == 1:
            location.id = _scalar(wire, value, f"{path}.id")
        elif number == 2:
            location.mapping_id = _scalar(wire, value, f"{path}.mapping_id")
        elif number == 3:
            location.address = _scalar(wire, value, f"{path}.address")
        elif number == 4:
            line_path = f"{path}.line[{len(location.lines)}]"
            location.lines.append(_line(_message(wire, value, line_path), line_path))
    return location


def _function(buf: memoryview, path: str) -> Function:
    function = Function()
    names = {1: "id", 2: "name", 3: "system_name", 4: "filename"}
    for number, wire, value in iter_fields(buf, path):
        if number in names:
            setattr(function, names[number], _scalar(wire, value, f"{path}.{names[number]}"))
    return function


def decode_profile(buf: bytes) -> Profile:
    """Decode a serialized perftools.profiles.Profile (already decompressed)."""
    profile = Profile()
    for number, wire, value in iter_fields(buf, "profile"):
        if number == 1:
            path = f"sample_type[{len(profile.sample_types)}]"
            profile.sample_types.append(_value_type(_message(wire, value, path), path))
        elif number == 2:
            path = f"sample[{len(profile.samples)}]"
            profile.samples.append(_sample(_message(wire, value, path), path))
        elif number == 3:
            path = f"mapping[{len(profile.mappings)}]"
            profile.mappings.append(_mapping(_message(wire, value, path), path))
        elif number == 4:
            path = f"location[{len(profile.locations)}]"
            profile.locations.append(_location(_message(wire, value, path), path))
        elif number == 5:
            path = f"function[{len(profile.functions)}]"
            profile.functions.append(_function(_message(wire, value, path), path))
        elif number == 6:
            path = f"string_table[{len(profile.strings)}]"
            text = _message(wire, value, path)
            profile.strings.append(bytes(text).decode("utf-8", errors="replace"))
        elif number == 9:
            profile.time_nanos = as_int64(_scalar(wire, value, "time_nanos"))
        elif number == 10:
            profile.duration_nanos = as_int64(_scalar(wire, value, "duration_nanos"))
        elif number == 11:
            profile.period_type = _value_type(_message(wire, value, "period_type"), "period_type")
        elif number == 12:
            profile.period = as_int64(_scalar(wire, value, "period"))
        elif number == 13:
            profile.comments.extend(_repeated_uints(wire, value, "comment"))
    if not profile.strings or profile.strings[0] != "":
        raise ProtoError("string_table must start with the empty string", "string_table[0]")
    return profile


# Profile's fields and their wire types (profile.proto); what a sniffed prefix may hold.
_PROFILE_FIELDS = {
    1: LENGTH,  # sample_type
    2: LENGTH,  # sample
    3: LENGTH,  # mapping
    4: LENGTH,  # location
    5: LENGTH,  # function
    6: LENGTH,  # string_table
    7: VARINT,  # drop_frames
    8: VARINT,  # keep_frames
    9: VARINT,  # time_nanos
    10: VARINT,  # duration_nanos
    11: LENGTH,  # period_type
    12: VARINT,  # period
    13: VARINT,  # comment (or packed: LENGTH)
    14: VARINT,  # default_sample_type
}
SAMPLE_TYPE, PERIOD_TYPE = 1, 11


def looks_like_profile(prefix: bytes) -> bool:
    """Cheap sniffing on the first bytes of a serialized Profile, whatever the order of its
    fields (pprof writes them in number order, the Go runtime `period_type` and `period`
    first): every field in the prefix is one of Profile's with its wire type (the last may run
    past the prefix), and a `sample_type` (a ValueType: two small varints) is among them."""
    pos, end = 0, len(prefix)
    seen_sample_type = False
    try:
        while pos < end:
            key, pos = read_varint(prefix, pos, "")
            number, wire = key >> 3, key & 7
            if _PROFILE_FIELDS.get(number) != wire and not (number == 13 and wire == LENGTH):
                return False
            if wire == VARINT:
                _value, pos = read_varint(prefix, pos, "")
                continue
            length, pos = read_varint(prefix, pos, "")
            if pos + length > end:  # the prefix ends inside this field
                break
            if number in (SAMPLE_TYPE, PERIOD_TYPE):
                if not _is_value_type(prefix[pos : pos + length]):
                    return False
                seen_sample_type |= number == SAMPLE_TYPE
            pos += length
    except ProtoError as exc:  # a varint cut by the prefix's end is the prefix's, not an error
        return exc.message == TRUNCATED_VARINT and seen_sample_type
    return seen_sample_type


def _is_value_type(buf: bytes) -> bool:
    """A ValueType message: string indices of its type and unit, small and not both 0."""
    try:
        fields = list(iter_fields(buf, ""))
    except ProtoError:
        return False
    return (
        bool(fields)
        and all(number in (1, 2) and wire == VARINT for number, wire, _v in fields)
        and any(value for _n, _w, value in fields)
        and all(isinstance(value, int) and value < 1 << 20 for _n, _w, value in fields)
    )
