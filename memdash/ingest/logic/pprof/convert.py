"""A decoded profile.proto heap profile (`pprof_columns.Columns`) as memdash snapshot content,
with numpy over the samples: Python loops run over the profile's distinct strings, mappings,
locations' frames and stack-tree levels, never over its samples.

The mapping is the one `pprof`'s module docstring states. The stack tree is built a level at a
time over the distinct stacks (samples with the same locations share one, found by hashing the
location lists and checking each against its representative), so its nodes are numbered by
depth; frames and images are numbered in the order the location table first uses them.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from memdash.core.logic.errors import InvalidUpload
from memdash.core.logic.numbers import MAX_INT32, MAX_INT64
from memdash.core.logic.units import malloc_category
from memdash.ingest.logic.pprof import stacks as pprof_stacks
from memdash.ingest.logic.pprof.columns import UIDS, Columns, concat_ranges
from memdash.ingest.logic.pprof.content import (
    MAX_UUID,
    UNKNOWN_IMAGE,
    HeapContent,
    check_image_offset,
    checked_text,
    image_entry,
)
from memdash.ingest.logic.pprof.proto import ProtoError
from memdash.ingest.logic.pprof.stacks import Frames

I64 = NDArray[np.int64]
CHUNK = 1 << 20  # ids looked up at a time: bounds the temporary arrays


# ---------------------------------------------------------------- what the profile is


HEAP_SAMPLE_TYPES = {"inuse_objects", "inuse_space", "alloc_objects", "alloc_space"}
DIFF_BASE_LABEL = "pprof::base"  # pprof -diff_base labels the negated base samples so


def delta_reason(profile: Columns) -> tuple[str, str] | None:
    """Why the profile is a difference rather than a heap, as the profile itself says it, with
    the path that says so; None for a heap snapshot.

    - Go's delta heap profile (`/debug/pprof/heap?seconds=N`, net/http/pprof's
      serveDeltaProfile) is the second profile minus the first: the runtime's four heap sample
      types with a `duration_nanos`, which the runtime's own heap profile never sets. A profile
      of fewer heap sample types over a duration is a profile store's merge of one series over
      its window (Pyroscope's, Parca's export of `inuse_space`), not a delta: it is read;
    - `pprof -diff_base` (and `-proto` of it) labels the samples of the base `pprof::base`.
    A comment naming the profile a delta or a diff says so too."""
    strings = profile.strings
    names = {strings[t] for t, _u in profile.sample_types if 0 <= t < len(strings)}
    if profile.duration_nanos > 0 and names >= HEAP_SAMPLE_TYPES:
        seconds = profile.duration_nanos / 1e9
        return (
            f"a delta heap profile: it covers {seconds:g} s (Go's /debug/pprof/heap?seconds=N), "
            "so its figures are the change over that time, not what the heap held",
            "duration_nanos",
        )
    if DIFF_BASE_LABEL in strings:
        labelled = np.flatnonzero(profile.label_key == strings.index(DIFF_BASE_LABEL))
        if labelled.size:
            first = int(labelled[0])
            sample = int(profile.label_sample[first])
            own = first - int(np.searchsorted(profile.label_sample, sample))
            return (
                "a difference of two profiles (pprof -diff_base labels the base's "
                f"samples `{DIFF_BASE_LABEL}`), not a heap",
                f"sample[{sample}].label[{own}]",
            )
    for i, index in enumerate(profile.comments):
        text = strings[index] if 0 <= index < len(strings) else ""
        if any(word in text.lower() for word in ("delta", "diff_base")):
            return f"a profile its comment calls a difference ({text[:80]!r})", f"comment[{i}]"
    return None


Positions = tuple[int | None, int | None, int | None, int | None]


def sample_value_indices(profile: Columns) -> Positions:
    """Positions of (in-use objects, in-use bytes, allocated objects, allocated bytes) in each
    sample's values, None for a figure the profile does not hold (a profile store's export
    holds one: `inuse_space`; a profile without allocation figures names its in-use pair
    `objects` and `space`); refuses profiles that hold none, which are not heap profiles."""
    names = [
        profile.string(t, f"sample_type[{i}].type")
        for i, (t, _u) in enumerate(profile.sample_types)
    ]
    position = {name: i for i, name in enumerate(names)}
    positions = (
        position.get("inuse_objects"),
        position.get("inuse_space"),
        position.get("alloc_objects"),
        position.get("alloc_space"),
    )
    if all(at is None for at in positions) and {"objects", "space"} <= position.keys():
        # the in-use pair of a profile without allocation figures (Node's heap profiles)
        positions = (position["objects"], position["space"], None, None)
    if all(at is None for at in positions):
        found = ", ".join(names) or "none"
        raise InvalidUpload(
            f"not a heap profile: its sample types are {found}; expected inuse_objects, "
            "inuse_space, alloc_objects and alloc_space (or some of them), or objects and space",
            "sample_type",
        )
    return positions


def _first_true(mask: NDArray[np.bool_]) -> int | None:
    return int(np.argmax(mask)) if mask.any() else None


def last_index_of(ids: NDArray[np.uint64], wanted: UIDS) -> tuple[NDArray[np.int32], int | None]:
    """For each wanted id, the index of the (last) entry with that id (as a dict built from the
    table in order would find it; -1 for none), and the first wanted one that has none."""
    index = np.full(len(wanted), -1, np.int32)
    if not len(ids) or not len(wanted):
        return index, 0 if len(wanted) else None
    top = int(ids.max())
    if top <= 4 * len(ids) + 1024:  # ids 1..N, as producers number them: a table of them
        table = np.full(top + 2, -1, np.int32)
        np.maximum.at(table, ids.astype(np.int64), np.arange(len(ids), dtype=np.int32))
        past = min(top + 1, int(np.iinfo(wanted.dtype).max))  # an id past the table: its -1
        for at in range(0, len(wanted), CHUNK):
            np.take(table, np.minimum(wanted[at : at + CHUNK], past), out=index[at : at + CHUNK])
    else:
        order = np.argsort(ids, kind="stable").astype(np.int32)
        ordered = ids[order]
        for at in range(0, len(wanted), CHUNK):
            part = wanted[at : at + CHUNK]
            where = np.maximum(np.searchsorted(ordered, part, side="right") - 1, 0)
            index[at : at + CHUNK] = np.where(ordered[where] == part, order[where], -1)
    return index, _first_true(index < 0)


def distinct_rows(keys: NDArray[np.uint64]) -> tuple[I64, I64]:
    """The distinct rows of `keys`, numbered in the order they first appear: each row's
    number, and where each number first appears."""
    order = np.lexsort(keys.T[::-1])  # stable: equal rows keep their order
    ordered = keys[order]
    new = np.ones(len(order), np.bool_)
    new[1:] = (ordered[1:] != ordered[:-1]).any(axis=1)
    group_in_order = np.cumsum(new) - 1
    first = order[new]  # sorted by key; renumber by first appearance
    rank = np.empty(len(first), np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    number = np.empty(len(order), np.int64)
    number[order] = rank[group_in_order]
    return number, np.sort(first)


# ---------------------------------------------------------------- conversion


def heap_content(profile: Columns) -> HeapContent:
    """The snapshot content of a heap profile (already checked not to be a difference)."""
    positions = sample_value_indices(profile)
    values, location_index = checked_samples(profile)
    content = HeapContent()
    frames = location_frames(profile, location_index, content)
    stacks = pprof_stacks.sample_stacks(
        profile.location_counts, location_index, frames, len(content.frame_table)
    )
    del location_index, frames  # a number per location of every sample: not kept for the rows
    content.stack_parents, content.stack_frames = stacks.parents, stacks.frames
    heap_rows(profile, values, positions, stacks.of_sample, content)
    return content


def checked_samples(profile: Columns) -> tuple[I64, NDArray[np.int32]]:
    """The samples' values (a row each) and the index in the location table of each of their
    location ids; refuses the first sample with a wrong number of values, a negative one or a
    location that is not in the table."""
    n, k = profile.sample_count, len(profile.sample_types)
    wrong_count = _first_true(profile.value_counts != k)
    whole = n if wrong_count is None else wrong_count
    values = profile.values[: whole * k].reshape(whole, k)
    negative = _first_true((values < 0).any(axis=1))
    index, missing_entry = last_index_of(profile.location_id, profile.location_ids)
    missing = None
    if missing_entry is not None:
        ends = np.cumsum(profile.location_counts)
        missing = int(np.searchsorted(ends, missing_entry, side="right"))
    first = min(i for i in (wrong_count, negative, missing, n) if i is not None)
    if first == wrong_count:
        raise ProtoError(
            f"{profile.value_counts[first]} values for {k} sample types", f"sample[{first}].value"
        )
    if first == negative:
        raise ProtoError(
            "negative value (a diff profile is not a heap snapshot)", f"sample[{first}].value"
        )
    if first == missing and missing_entry is not None:
        location_id = int(profile.location_ids[missing_entry])
        raise ProtoError(
            f"location {location_id} is not in the profile", f"sample[{first}].location_id"
        )
    return values, index


def _images(profile: Columns, used: I64, content: HeapContent) -> I64:
    """The image of each used location (creating the images in the order the locations first
    use them); checks that each address lies in its image."""
    mapping_ids = profile.location_mapping[used]
    distinct, first = np.unique(mapping_ids, return_index=True)
    mappings = {m.id: (i, m) for i, m in enumerate(profile.mappings)}
    image_of = np.zeros(len(distinct), np.int64)
    loads = np.zeros(len(distinct), np.uint64)
    for rank in np.argsort(first, kind="stable").tolist():
        mapping_id, location = int(distinct[rank]), int(used[first[rank]])
        if mapping_id == 0:
            entry, load = {"name": UNKNOWN_IMAGE, "load_address": "0x0"}, 0
        elif mapping_id not in mappings:
            raise ProtoError(
                f"mapping {mapping_id} is not in the profile", f"location[{location}].mapping_id"
            )
        else:
            index, mapping = mappings[mapping_id]
            file = profile.string(mapping.filename, f"mapping[{index}].filename")
            build_id = profile.string(mapping.build_id, f"mapping[{index}].build_id")
            checked_text(file, f"mapping[{index}].filename")
            checked_text(build_id, f"mapping[{index}].build_id")
            if len(build_id) > MAX_UUID:
                raise InvalidUpload(
                    f"is longer than {MAX_UUID} characters", f"mapping[{index}].build_id"
                )
            load = mapping.memory_start - mapping.file_offset
            entry = image_entry(file, build_id, load)
        image_of[rank] = len(content.images)
        loads[rank] = max(0, load)
        content.images.append(entry)
    which = np.searchsorted(distinct, mapping_ids)
    address, load_of = profile.location_address[used], loads[which]
    outside = (address < load_of) | (address - load_of > np.uint64(MAX_INT64))
    bad = _first_true(outside)
    if bad is not None:
        path = f"location[{int(used[bad])}].address"
        check_image_offset(int(address[bad]), int(load_of[bad]), path)
    return image_of[which]


def location_frames(profile: Columns, index: NDArray[np.int32], content: HeapContent) -> Frames:
    """The frames of every location the samples use: one per line (function), a location
    without lines one of its own; outermost first, as the stack tree takes them."""
    count = len(profile.location_id)
    used_mask = np.zeros(count, np.bool_)
    used_mask[index] = True  # (bincount would copy the int32 index to int64 first)
    used = np.flatnonzero(used_mask)
    image = _images(profile, used, content)
    lines = profile.line_counts[used]
    line_start = np.cumsum(profile.line_counts) - profile.line_counts
    line_ids = concat_ranges(line_start[used], line_start[used] + lines)
    line_location = np.repeat(used, lines)
    symbol, file, number = _line_names(profile, line_ids, line_location, line_start)
    # A row per frame of each used location, innermost first: its lines, or the bare address.
    rows = np.maximum(lines, 1)
    at = np.cumsum(rows) - rows
    into = concat_ranges(at[lines > 0], at[lines > 0] + lines[lines > 0])
    keys = np.zeros((int(rows.sum()), 5), np.uint64)
    keys[:, 0] = np.repeat(image, rows)
    keys[:, 1] = np.repeat(profile.location_address[used], rows)
    keys[into, 2], keys[into, 3], keys[into, 4] = symbol, file, number
    frame_of_row, first = distinct_rows(keys)
    strings = profile.strings
    content.frame_table = [
        (image_index, address, strings[name], strings[source], line or None)
        for image_index, address, name, source, line in keys[first].tolist()
    ]
    # Outermost first within each location.
    starts, ends = np.repeat(at, rows), np.repeat(at + rows, rows)
    flipped = starts + ends - 1 - np.arange(len(frame_of_row))
    first_frame = np.zeros(count, np.int64)
    frame_count = np.zeros(count, np.int64)
    first_frame[used], frame_count[used] = at, rows
    return Frames(first_frame, frame_count, frame_of_row[flipped])


def _line_names(
    profile: Columns, line_ids: I64, line_location: I64, line_start: I64
) -> tuple[NDArray[np.uint64], NDArray[np.uint64], NDArray[np.uint64]]:
    """For each line: its function's name and file (the first index of each distinct string,
    0 for none) and its line number (0 for none), each checked."""

    def line_path(i: int, name: str) -> str:
        location = int(line_location[i])
        return f"location[{location}].line[{int(line_ids[i] - line_start[location])}].{name}"

    function_ids = profile.line_function[line_ids]
    named = np.flatnonzero(function_ids != 0)
    function, missing = last_index_of(profile.function_id, function_ids[named])
    if missing is not None:
        raise ProtoError(
            f"function {int(function_ids[named[missing]])} is not in the profile",
            line_path(int(named[missing]), "function_id"),
        )
    names = np.zeros(len(line_ids), np.uint64)
    files = np.zeros(len(line_ids), np.uint64)
    numbers = np.zeros(len(line_ids), np.int64)
    names[named] = profile.function_name[function]
    files[named] = profile.function_filename[function]
    numbers[named] = np.maximum(profile.line_number[line_ids[named]], 0)
    too_long = _first_true(numbers > MAX_INT32)
    if too_long is not None:
        raise InvalidUpload(
            f"line {int(numbers[too_long])} does not fit in 32 bits", line_path(too_long, "line")
        )
    strings = profile.strings
    for column, what in ((names, "name"), (files, "filename")):
        outside = _first_true(column >= len(strings))
        if outside is not None:
            at = int(function[np.searchsorted(named, outside)])
            profile.string(int(column[outside]), f"function[{at}].{what}")
        for text_index in np.unique(column).tolist():
            if "\x00" in strings[text_index]:
                first = int(np.argmax(column == text_index))
                at = int(function[np.searchsorted(named, first)])
                checked_text(strings[text_index], f"function[{at}].{what}")
    canonical: dict[str, int] = {}
    first_of = np.array([canonical.setdefault(s, i) for i, s in enumerate(strings)], np.uint64)
    return first_of[names], first_of[files], numbers.astype(np.uint64)


def heap_rows(
    profile: Columns,
    values: I64,
    positions: Positions,
    stacks: I64,
    content: HeapContent,
) -> None:
    """The rows: a sample's in-use figures are persistent, what it allocated beyond them
    transient, its category the block size of its `bytes` label (else its average block);
    samples of one category and stack add up, in the order they first appear."""
    none = np.zeros(len(values), np.int64)  # a figure the profile does not hold
    inuse_objects, inuse_space, alloc_objects, alloc_space = (
        none if at is None else values[:, at] for at in positions
    )
    block = np.full(len(values), -1, np.int64)
    if "bytes" in profile.strings:
        labelled = (profile.label_key == profile.strings.index("bytes")) & (profile.label_str == 0)
        sample, first = np.unique(profile.label_sample[labelled], return_index=True)
        block[sample] = profile.label_num[labelled][first]
    objects = np.where(inuse_objects != 0, inuse_objects, alloc_objects)
    space = np.where(inuse_objects != 0, inuse_space, alloc_space)
    average = np.where(objects != 0, space // np.maximum(objects, 1), 0)
    block = np.where(block >= 0, block, average)
    counts = np.stack(
        [
            inuse_objects,
            inuse_space,
            np.maximum(alloc_objects - inuse_objects, 0),
            np.maximum(alloc_space - inuse_space, 0),
        ],
        axis=1,
    )
    kept = np.flatnonzero(counts.any(axis=1))  # a row of zeros adds nothing to any total
    counts, block, stacks = counts[kept], block[kept], stacks[kept]
    _check_totals(counts)
    sizes, size_of_row = np.unique(block, return_inverse=True)
    category_of_name: dict[str, int] = {}
    category_of_size = np.array(
        [
            category_of_name.setdefault(malloc_category(size), len(category_of_name))
            for size in sizes.tolist()
        ],
        np.int64,
    )
    content.categories = list(category_of_name)
    category = category_of_size[size_of_row.ravel()] if len(sizes) else size_of_row
    width = max(1, len(content.stack_parents) + 1)
    key = category * width + (stacks + 1)
    by_key = np.argsort(key, kind="stable")  # a key's samples in the order they come
    ordered = key[by_key]
    starts = np.flatnonzero(np.diff(ordered, prepend=-1))  # (keys are never negative)
    sums = np.add.reduceat(counts[by_key], starts, axis=0) if len(starts) else counts[:0]
    order = np.argsort(by_key[starts])  # the keys by their first sample
    distinct = ordered[starts][order]
    content.row_counts = sums[order]
    content.row_category = distinct // width
    content.row_stack = distinct % width - 1


def _check_totals(counts: I64) -> None:
    """Every total memdash stores is at most a sum over all rows (persistent and transient
    together for # Total and Total Bytes): those sums must fit 64 bits."""
    if not len(counts) or int(counts.max()) <= MAX_INT64 // (2 * len(counts)):
        return
    p, pb, t, tb = (int(x) for x in counts.sum(axis=0, dtype=object))
    named = [("persistent", p), ("persistent_bytes", pb), ("transient", t)]
    named += [("transient_bytes", tb), ("# Total", p + t), ("Total Bytes", pb + tb)]
    for name, total in named:
        if total > MAX_INT64:
            raise InvalidUpload(
                f"the {name} of all samples add up to {total}, past 2^63 - 1", "sample"
            )
