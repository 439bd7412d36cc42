"""URLs for the compare views: the page each side of a diff is shown on (through the models'
`get_absolute_url`, i.e. `core.links.page_url`) and the compare lens's own pages and API."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.urls import reverse

from memdash.compare.reads.refs import Side, SnapshotFilter
from memdash.core.models import App, Build


def side_url(side: Side) -> str:
    """The page of what a side names: the build, the snapshot, the snapshot at a generation."""
    if side.build is not None:
        return side.build.get_absolute_url()
    assert side.snapshot is not None  # a snapshot or generation side
    url = side.snapshot.get_absolute_url()
    return f"{url}?generation={side.generation_query}" if side.kind == "generation" else url


def side_json(side: Side) -> dict[str, Any]:
    return side.as_json(side_url(side))


def diff_tree_api_url() -> str:
    return reverse("compare:api_diff_calltree")


def build_compare_url(
    app: App,
    base: Build,
    target: Build,
    filters: SnapshotFilter | None = None,
    category: str = "",
) -> str:
    """Build compare of these builds (under these filters; of one category, whose row and diff
    call tree it opens on)."""
    params: dict[str, str | int] = {"base": base.pk, "target": target.pk}
    params.update({k: v for k, v in (filters or SnapshotFilter()).as_json().items() if v})
    if category:
        params["category"] = category
    anchor = "#difftree" if category else ""
    return f"{reverse('compare:build_compare', args=[app.pk])}?{urlencode(params)}{anchor}"
