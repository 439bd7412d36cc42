"""Reading the compare views' requests: query parameters, and what the selectors raise turned
into the answers a view gives (400 for what cannot be read; 404 for what is not there is
`core.web.http.found`)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date

from django.http import Http404, QueryDict
from rest_framework.exceptions import ValidationError

from memdash.allocations.web.params import MAX_MINIMUM, parse_rules, query_category
from memdash.compare.logic.build_rows import DEFAULT_SORT, SORT_KEYS
from memdash.compare.logic.stats import DEFAULT_ALPHA, GrowthLimit, parse_alpha, parse_growth_limit
from memdash.compare.logic.trends import AXES, SCALES, DateRange
from memdash.compare.reads.diffs import DEFAULT_DIFF_LIFESPAN, DIFF_LIFESPANS, DiffTreeQuery
from memdash.compare.reads.refs import RefError, SnapshotFilter
from memdash.core.logic.numbers import MAX_INT64
from memdash.core.web.api import parse_flag, parse_int


def ref_error(name: str, error: RefError) -> ValidationError:
    return ValidationError({name: str(error)})


def parse_diff_lifespan(value: str | None) -> str:
    value = value or DEFAULT_DIFF_LIFESPAN
    if value not in DIFF_LIFESPANS:
        raise ValidationError({"lifespan": f"must be one of {', '.join(DIFF_LIFESPANS)}"})
    return value


def page_lifespan(value: str | None) -> str:
    """The lifespan of a page: an unknown one is a 404."""
    try:
        return parse_diff_lifespan(value)
    except ValidationError:
        raise Http404("Unknown lifespan") from None


MAX_SEARCH = 200  # characters of "Involves symbol", as the call tree allows


def diff_tree_query(params: QueryDict) -> DiffTreeQuery:
    """The diff call tree's lifespan, category and options; 400 for values it cannot read."""
    search = params.get("search", "")
    if len(search) > MAX_SEARCH:  # as sent, blanks too (the schema's maxLength)
        raise ValidationError({"search": f"at most {MAX_SEARCH} characters"})
    search = search.strip()
    return DiffTreeQuery(
        lifespan=parse_diff_lifespan(params.get("lifespan")),
        category=query_category(params),
        inverted=parse_flag(params, "inverted"),
        hide_system=parse_flag(params, "hide_system"),
        flatten=parse_flag(params, "flatten"),
        search=search,
        alpha=alpha_param(params.get("alpha")),
        rules=parse_rules(params),
        min_bytes=parse_int(params, "min_bytes", 0, 0, MAX_MINIMUM),
        min_count=parse_int(params, "min_count", 0, 0, MAX_MINIMUM),
    )


def parse_limit(value: str | None) -> GrowthLimit | None:
    if value in (None, ""):
        return None
    try:
        return parse_growth_limit(value)
    except ValueError as error:
        raise ValidationError({"max_growth": str(error)}) from None


def alpha_param(value: str | None) -> float:
    """The significance level `alpha` (default 0.05); 400 for one outside (0, 1)."""
    if value in (None, ""):
        return DEFAULT_ALPHA
    try:
        return parse_alpha(value)
    except ValueError as error:
        raise ValidationError({"alpha": str(error)}) from None


def compare_sort(params: Mapping[str, str]) -> tuple[str, bool]:
    """(column, descending) of build compare's `sort` and `dir`; 400 for unknown ones."""
    sort = params.get("sort") or DEFAULT_SORT
    if sort != DEFAULT_SORT and sort not in SORT_KEYS:
        raise ValidationError({"sort": f"must be one of {DEFAULT_SORT}, {', '.join(SORT_KEYS)}"})
    direction = params.get("dir") or "desc"
    if direction not in ("desc", "asc"):
        raise ValidationError({"dir": "must be desc or asc"})
    return sort, direction == "desc"


def parse_min_delta(value: str | None) -> int:
    """Bytes (`4096`, `64KiB`; 0 when absent or blank): growth below them is ignored; from
    2^63 - 1 on, all of it (no size is larger)."""
    if not (value or "").strip():
        return 0
    try:
        limit = parse_growth_limit(value or "")
    except ValueError:
        limit = None
    if limit is None or limit.bytes is None:
        raise ValidationError({"min_delta": "must be bytes, like 4096 or 64KiB"})
    return min(limit.bytes, MAX_INT64)


def snapshot_filter(params: Mapping[str, str]) -> SnapshotFilter:
    return SnapshotFilter(
        trigger=params.get("trigger", ""), model=params.get("model", ""), os=params.get("os", "")
    )


def choice(params: Mapping[str, str], name: str, choices: tuple[str, ...]) -> str:
    """One of `choices` (the first when absent or blank); 400 for another value."""
    value = params.get(name) or choices[0]
    if value not in choices:
        raise ValidationError({name: f"must be one of {', '.join(choices)}"})
    return value


def trend_axis(params: Mapping[str, str]) -> str:
    return choice(params, "x", AXES)


def trend_scale(params: Mapping[str, str]) -> str:
    return choice(params, "scale", SCALES)


def date_range(params: Mapping[str, str]) -> DateRange:
    """Capture days `from` … `to` (YYYY-MM-DD, both included, either may be left out); 400 for
    a date that cannot be read or a range that ends before it starts."""
    start, end = _day(params, "from"), _day(params, "to")
    if start and end and end < start:
        raise ValidationError({"to": "must not be before from"})
    return DateRange(start, end)


def _day(params: Mapping[str, str], name: str) -> date | None:
    value = (params.get(name) or "").strip()
    if not value:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise ValidationError({name: "must be a date, like 2026-11-20"}) from None
