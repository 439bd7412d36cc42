"""The Allocations List of a snapshot and of a build (pages, JSON, CSV) and the whole stack of a
row (the Extended Detail pane). The list is read a keyset page at a time
(`allocations.reads.allocation_list`): the permalink carries the filters, the sort and the
page's cursor (`after` or `before`)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator, Sequence
from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, QueryDict
from django.http.response import HttpResponseBase
from django.shortcuts import get_object_or_404, render
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.decorators import api_view
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.urls import remove_query_param, replace_query_param

from memdash.allocations.logic.analysis import LIFESPANS, UINT64_MASK, generation_name
from memdash.allocations.logic.listing import (
    BLOCK_KEYS,
    SORT_KEYS,
    Cursor,
    decode_cursor,
    encode_cursor,
    fits,
)
from memdash.allocations.models import Generation, Snapshot, StackNode
from memdash.allocations.reads import allocation_list as listing
from memdash.allocations.reads import snapshots as selectors
from memdash.allocations.reads.generations import has_generation
from memdash.allocations.web.params import query_category
from memdash.core.logic.numbers import MAX_INT64
from memdash.core.models import Build
from memdash.core.web.api import Contradicted, MissingReference, parse_int
from memdash.core.web.export import Cell, csv_response, csv_table
from memdash.core.web.http import app_or_404, found
from memdash.core.web.schema import CATEGORY_HASH_PARAMETER, errors, int_parameter, number_pattern
from memdash.snapshots.web.calltree import SNAPSHOT_FILTER_PARAMETERS
from memdash.snapshots.web.openapi import (
    ALLOCATION_LIST,
    GENERATION_PARAMETER,
    RANGE_PARAMETERS,
    STACK,
)
from memdash.snapshots.web.timeline import page_time_range, parse_time_range
from memdash.snapshots.web.views import (
    LIFESPAN_LABELS,
    parse_generation,
    parse_lifespan,
    snapshot_filters,
)

# a snapshot's list: every column but the snapshot, and an events run's blocks by address and
# by the time they were made (`has_blocks`; another snapshot's list has no such column)
SNAPSHOT_SORTS = [*(s for s in SORT_KEYS if s != "snapshot"), *sorted(BLOCK_KEYS)]
BUILD_SORTS = list(SORT_KEYS)
# listing.CURSOR_SHAPE, with its numbers bounded as decode_cursor bounds them
_NUMBER = number_pattern(MAX_INT64)
CURSOR = {"type": "string", "pattern": rf"^(?:-?{_NUMBER}|t[A-Za-z0-9_-]*)\.{_NUMBER}\.[01]$"}
MIN_STACK, MAX_STACK = -(2**63), 2**63 - 1


def _cursor(params: QueryDict, name: str, sort: str) -> Cursor | None:
    """The page's cursor: 400 when the text is no cursor; 404 (with the parameter's name) for
    one of a list sorted otherwise, a place this list does not have."""
    text = params.get(name, "")
    if not text:
        return None
    cursor = decode_cursor(text)
    if cursor is None and re.fullmatch(CURSOR["pattern"], text):
        # The schema's shape, but no place a list of this app can have (a key past 64 bits
        # behind leading zeros, a text key too long): not there, as a cursor of another sort.
        raise MissingReference(name, "no place of this list")
    if cursor is None:
        raise ValidationError({name: "not a cursor (the `next` or `previous` of an answer)"})
    if not fits(cursor, sort):
        raise MissingReference(name, "a cursor of this list sorted by another column")
    return cursor


def parse_list_query(params: QueryDict, sorts: Sequence[str]) -> listing.ListQuery:
    """The list's filters, sort and page from a query string (ValidationError naming the bad
    parameter)."""
    sort = params.get("sort") or "size"
    if sort not in sorts:
        raise ValidationError({"sort": f"must be one of {', '.join(sorts)}"})
    direction = params.get("dir") or "desc"
    if direction not in ("desc", "asc"):
        raise ValidationError({"dir": "must be desc or asc"})
    search = params.get("q", "")
    if len(search) > listing.MAX_SEARCH:
        raise ValidationError({"q": f"at most {listing.MAX_SEARCH} characters"})
    after, before = _cursor(params, "after", sort), _cursor(params, "before", sort)
    if after is not None and before is not None:
        # Both are well-formed alone (the schema cannot say "one of"): a contradiction, 409.
        raise Contradicted("before", "give `after` or `before`, not both")
    return listing.ListQuery(
        category=query_category(params),
        generation=parse_generation(params.get("generation")),
        lifespan=parse_lifespan(params.get("lifespan")),
        search=search.strip(),
        sort=sort,
        descending=direction == "desc",
        after=after,
        before=before,
        limit=parse_int(params, "limit", listing.DEFAULT_LIMIT, 1, listing.MAX_LIMIT),
    )


def _query_or_404(params: QueryDict, sorts: Sequence[str]) -> listing.ListQuery:
    try:
        return parse_list_query(params, sorts)
    except (ValidationError, NotFound):
        raise Http404("Unknown list option") from None


def _generation_names(snapshot_ids: set[int]) -> dict[tuple[int, int], str]:
    # Unordered: Generation's default order is its snapshot's (captured_at), a join by the
    # snapshot's id that Citus answers only by repartitioning, seconds a query.
    rows = Generation.objects.filter(snapshot_id__in=snapshot_ids).order_by()
    return {(s, i): n for s, i, n in rows.values_list("snapshot_id", "index", "name")}


def entry_json(entry: listing.Entry, names: dict[tuple[int, int], str]) -> dict[str, Any]:
    caller = entry.caller
    generation = entry.generation
    name = names.get((entry.snapshot, generation), "") if generation is not None else ""
    address = None if entry.address is None else f"0x{entry.address & UINT64_MASK:x}"
    return {
        "row": entry.row,
        "snapshot": entry.snapshot,
        "address": address,
        "made_ms": entry.made_ms,
        "freed_ms": entry.freed_ms,
        "live": entry.live,
        "category": entry.category,
        "kind": entry.kind,
        "count": entry.count,
        "size": entry.size,
        "thread": entry.thread,
        "generation": generation,
        "generation_name": generation_name(generation, name),
        "stack": str(entry.stack) if entry.stack is not None else None,
        "responsible_caller": caller.label if caller else "",
        "responsible_library": caller.image if caller else "",
        "responsible_frame": caller.as_dict() if caller else None,
    }


def page_json(page: listing.ListPage) -> list[dict[str, Any]]:
    names = _generation_names({e.snapshot for e in page.entries})
    return [entry_json(entry, names) for entry in page.entries]


CSV_HEADERS = [
    "Snapshot", "Category", "Live", "Count", "Size (bytes)", "Responsible library",
    "Responsible caller", "Generation", "Thread",
]  # fmt: skip
BLOCK_HEADERS = ["Address", "Created (ms)", "Freed (ms)"]  # an events run's blocks


def list_csv(
    filename: str, app_id: int, snapshots: Sequence[Snapshot], query: listing.ListQuery,
    blocks: bool = False, addresses: bool = True,
) -> HttpResponseBase:  # fmt: skip
    """Every entry of the list under its filters and sort (all its pages); `blocks`: with each
    block's times, and its address unless the blocks have none (`addresses`: heaptrack's)."""
    extra = BLOCK_HEADERS if addresses else BLOCK_HEADERS[1:]

    def cells() -> Iterator[list[Cell]]:
        names: dict[tuple[int, int], str] = {}
        for entry in listing.every_entry(app_id, snapshots, query):
            data = entry_json(entry, names)
            times = [data["address"], entry.made_ms, entry.freed_ms] if blocks else []
            times = times if addresses else times[1:]
            yield [
                entry.snapshot, entry.category, entry.live, entry.count, entry.size,
                data["responsible_library"], data["responsible_caller"], data["generation_name"],
                entry.thread, *times,
            ]  # fmt: skip

    headers = [*CSV_HEADERS, *extra] if blocks else CSV_HEADERS
    return csv_response(filename, headers, cells())


COLUMNS = [
    ("category", "Category"),
    ("live", "Live"),
    ("count", "# Count"),
    ("size", "Size"),
    ("library", "Responsible Library"),
    ("caller", "Responsible Caller"),
    ("generation", "Generation"),
    ("thread", "Thread"),
]


def _page_context(
    request: HttpRequest, app_id: int, snapshots: Sequence[Snapshot], query: listing.ListQuery
) -> dict[str, Any]:
    page = listing.allocation_page(app_id, snapshots, query)
    return {
        "entries": page_json(page),
        "next_cursor": encode_cursor(page.next) if page.next else "",
        "previous_cursor": encode_cursor(page.previous) if page.previous else "",
        "first_page": query.after is not None or query.before is not None,
        "pruned": page.pruned,
        "lifespan": query.lifespan,
        "lifespans": LIFESPAN_LABELS,
        "sort": query.sort,
        "dir": "desc" if query.descending else "asc",
        "q": query.search,
        "category": query.category,
    }


def blocks_listed(snapshot: Snapshot, query: listing.ListQuery) -> tuple[bool, bool]:
    """Whether the snapshot's list is of its blocks (an events run's or a heaptrack file's
    allocations one by one: read from its list made ahead, or from the blocks themselves until
    the task has made it; a request never makes it), and whether they have addresses (a
    heaptrack file's have none). A sort by address or time of a list without them: a
    well-formed sort the data contradicts (409 at `sort`)."""
    blocks, addresses = listing.listed_blocks(snapshot.app_id, snapshot.pk)
    # pruned: its blocks are gone with its rows, and it lists nothing, whatever the sort
    if snapshot.rows_pruned_at is None:
        if query.sort == "time" and not blocks:
            raise Contradicted("sort", "only allocations listed one by one have times")
        if query.sort == "address" and not addresses:
            raise Contradicted("sort", "only an events upload's allocations have addresses")
    return blocks, addresses


@login_required
def snapshot_allocations(request: HttpRequest, snapshot_id: int) -> HttpResponseBase:
    with found():
        snapshot = selectors.snapshot_for_user(request.user, snapshot_id)
    query = _query_or_404(request.GET, SNAPSHOT_SORTS)
    if not has_generation(snapshot, query.generation):
        raise Http404("No such generation in this snapshot")
    try:
        blocks, addresses = blocks_listed(snapshot, query)
    except Contradicted:
        raise Http404("Unknown list option") from None
    chosen = page_time_range(snapshot, request.GET)
    if chosen is not None:  # the range chosen on the snapshot's timeline
        query = dataclasses.replace(query, time_range=chosen.span)
    if csv_table(request) is not None:
        name = f"snapshot-{snapshot.pk}-allocations"
        return list_csv(name, snapshot.app_id, [snapshot], query, blocks, addresses)
    columns = COLUMNS
    if blocks:  # Instruments' order: the address first, the time after the category
        columns = [COLUMNS[0], ("time", "Created"), *COLUMNS[1:]]
    if addresses:
        columns = [("address", "Address"), *columns]
    context = {
        "app": snapshot.app,
        "snapshot": snapshot,
        "generation": query.generation,
        "generations": snapshot.generations.order_by("index"),  # no join for the default
        "columns": columns,
        "blocks": blocks,
        "addresses": addresses,
        "time_range": chosen,
        "range_query": urlencode(chosen.query_value) if chosen else "",
        **_page_context(request, snapshot.app_id, [snapshot], query),
    }
    return render(request, "snapshots/allocations.html", context)


def _build_and_snapshots(
    request: HttpRequest | Request, app_id: int, build_id: int
) -> tuple[Build, list[Snapshot]]:
    app = app_or_404(request.user, app_id)
    build = get_object_or_404(Build, pk=build_id, app=app)
    filters = snapshot_filters(request.GET)
    snapshots = selectors.build_snapshots(build, **filters).select_related(None)
    return build, list(snapshots.only("pk", "rows_pruned_at", "symbols_version"))


@login_required
def build_allocations(request: HttpRequest, app_id: int, build_id: int) -> HttpResponseBase:
    build, snapshots = _build_and_snapshots(request, app_id, build_id)
    query = _query_or_404(request.GET, BUILD_SORTS)
    if csv_table(request) is not None:
        name = f"build-{build.version}-{build.number}-allocations"
        return list_csv(name, build.app_id, snapshots, query)
    generations = sorted(
        set(
            Generation.objects.filter(snapshot__in=[s.pk for s in snapshots])
            .order_by()  # a set: no join to the snapshots for their order (as above)
            .values_list("index", flat=True)
        )
    )
    context = {
        "app": build.app,
        "build": build,
        "snapshot_count": len(snapshots),
        "generation": query.generation,
        "build_generations": [(i, generation_name(i)) for i in generations],
        "columns": [("snapshot", "Snapshot"), *COLUMNS],
        **_page_context(request, build.app_id, snapshots, query),
    }
    return render(request, "snapshots/allocations.html", context)


# --- JSON ---------------------------------------------------------------------------------------

LIST_PARAMETERS = [
    OpenApiParameter("category", str, description="a category name; all categories when absent"),
    CATEGORY_HASH_PARAMETER,
    OpenApiParameter("lifespan", str, enum=list(LIFESPANS)),
    GENERATION_PARAMETER,
    OpenApiParameter(
        "q",
        {"type": "string", "maxLength": listing.MAX_SEARCH},
        description="only entries whose category, responsible caller (symbol) or responsible "
        "library contains this (any case)",
    ),
    OpenApiParameter("dir", str, enum=["desc", "asc"]),
    OpenApiParameter("after", CURSOR, description="the cursor of an answer's `next` URL"),
    OpenApiParameter("before", CURSOR, description="the cursor of an answer's `previous` URL"),
    int_parameter(
        "limit", 1, listing.MAX_LIMIT,
        f"entries to answer (default {listing.DEFAULT_LIMIT}, at most {listing.MAX_LIMIT})",
    ),
]  # fmt: skip


def _list_answer(
    request: Request, app_id: int, snapshots: Sequence[Snapshot], query: listing.ListQuery
) -> dict[str, Any]:
    page = listing.allocation_page(app_id, snapshots, query)
    url = remove_query_param(remove_query_param(request.build_absolute_uri(), "after"), "before")
    return {
        "sort": query.sort,
        "dir": "desc" if query.descending else "asc",
        "next": replace_query_param(url, "after", encode_cursor(page.next)) if page.next else None,
        "previous": replace_query_param(url, "before", encode_cursor(page.previous))
        if page.previous
        else None,
        "pruned_snapshots": page.pruned,
        "rows": page_json(page),
    }


@extend_schema(
    summary="The Allocations List of a snapshot: its rows as live and freed entries, a keyset "
    "page at a time",
    parameters=[
        *LIST_PARAMETERS,
        OpenApiParameter("sort", str, enum=SNAPSHOT_SORTS),
        *RANGE_PARAMETERS,
    ],
    responses={200: ALLOCATION_LIST, **errors(409)},
)
@api_view(["GET"])
def api_snapshot_allocations(request: Request, snapshot_id: int) -> Response:
    with found():
        snapshot = selectors.snapshot_for_user(request.user, snapshot_id)
    query = parse_list_query(request.query_params, SNAPSHOT_SORTS)
    if not has_generation(snapshot, query.generation):
        raise NotFound("no such generation in this snapshot")
    blocks_listed(snapshot, query)
    chosen = parse_time_range(snapshot, request.query_params)
    if chosen is not None:  # only what the snapshot made in that range of its timeline
        query = dataclasses.replace(query, time_range=chosen.span)
    return Response(_list_answer(request, snapshot.app_id, [snapshot], query))


@extend_schema(
    summary="The Allocations List of a build: the rows of its snapshots (those the filters "
    "keep), each entry with its snapshot, a keyset page at a time",
    parameters=[
        *LIST_PARAMETERS,
        OpenApiParameter("sort", str, enum=BUILD_SORTS),
        *SNAPSHOT_FILTER_PARAMETERS,
    ],
    responses={200: ALLOCATION_LIST, **errors(409)},
)
@api_view(["GET"])
def api_build_allocations(request: Request, app_id: int, build_id: int) -> Response:
    build, snapshots = _build_and_snapshots(request, app_id, build_id)
    query = parse_list_query(request.query_params, BUILD_SORTS)
    return Response(_list_answer(request, build.app_id, snapshots, query))


@extend_schema(
    summary="The whole stack of an allocation row (the Extended Detail), innermost frame first",
    parameters=[
        OpenApiParameter(
            "id",
            {"type": "integer", "minimum": MIN_STACK, "maximum": MAX_STACK},
            required=True,
            description="the `stack` of a listed row",
        )
    ],
    responses={200: STACK},
)
@api_view(["GET"])
def api_stack(request: Request, snapshot_id: int) -> Response:
    with found():
        snapshot = selectors.snapshot_for_user(request.user, snapshot_id)
    if not request.query_params.get("id"):
        raise ValidationError({"id": "a stack id is required"})
    stack_id = parse_int(request.query_params, "id", 0, MIN_STACK, MAX_STACK)
    try:
        frames = listing.stack_of(snapshot.app_id, stack_id)
    except StackNode.DoesNotExist:
        raise NotFound("no such stack in this snapshot's app") from None
    return Response({"stack": str(stack_id), "frames": [f.as_dict() for f in frames]})
