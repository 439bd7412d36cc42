"""The JSON answers of the compare API, made from what the selectors read. No queries and no
URLs of their own: the views give each side's page URL (`links.side_url`)."""

from __future__ import annotations

from typing import Any

from memdash.compare.logic.build_rows import (
    DEFAULT_SORT,
    ROW_FIELDS,
    BuildCompareRow,
    BuildComparison,
    sorted_values,
)
from memdash.compare.logic.category_diff import DiffRow, summarize_diff
from memdash.compare.logic.gate import GateFailure, gate_failures, unproven_growth
from memdash.compare.logic.stats import GrowthLimit
from memdash.compare.reads.diffs import DiffTreeQuery, TreePage
from memdash.compare.reads.refs import SnapshotFilter
from memdash.core.models import Build

Json = dict[str, Any]


def diff_answer(rows: list[DiffRow], base: Json, target: Json, lifespan: str) -> Json:
    """GET /api/v1/diff: the rows and their summary; `base` and `target` are the sides' JSON."""
    summary = summarize_diff(rows)
    summary.update(base=base, target=target, lifespan=lifespan)
    return {"rows": [r.as_dict() for r in rows], "summary": summary}


def tree_answer(
    page: TreePage, node: str | None, base: Json, target: Json, query: DiffTreeQuery, offset: int
) -> Json:
    """GET /api/v1/diff/calltree: a page of the children of `node` (the roots when None), each
    side's figure its median per snapshot (`*_mean_*`: the mean)."""
    return {
        "node": node,
        "base": base,
        "target": target,
        **query.as_json(),
        "statistic": "median per snapshot",
        "total": page.total,
        "offset": offset,
        "nodes": page.nodes,
    }


def compare_row_json(row: BuildCompareRow) -> Json:
    sizes, counts = row.bytes, row.count
    base, target, test = sizes.base, sizes.target, sizes.test
    return {
        "category": row.category,
        "status": row.status,
        "base_bytes_mean": base.mean,
        "base_bytes_median": base.median,
        "base_bytes_q1": base.q1,
        "base_bytes_q3": base.q3,
        "base_bytes_min": base.minimum,
        "base_bytes_max": base.maximum,
        "target_bytes_mean": target.mean,
        "target_bytes_median": target.median,
        "target_bytes_q1": target.q1,
        "target_bytes_q3": target.q3,
        "target_bytes_min": target.minimum,
        "target_bytes_max": target.maximum,
        "delta_mean_bytes": sizes.delta_mean,
        "delta_median_bytes": sizes.delta_median,
        "base_count_mean": counts.base.mean,
        "base_count_median": counts.base.median,
        "target_count_mean": counts.target.mean,
        "target_count_median": counts.target.median,
        "delta_mean_count": counts.delta_mean,
        "delta_median_count": counts.delta_median,
        "base_snapshots": base.n,
        "target_snapshots": target.n,
        "base_present": row.base_present,
        "target_present": row.target_present,
        "u": test.u,
        "p_value": test.p_value,
        "test": test.method,
        "significant": row.significant,
    }


def failure_json(failure: GateFailure) -> Json:
    return {
        "category": failure.category,
        "base_median_bytes": failure.base_bytes,
        "target_median_bytes": failure.target_bytes,
        "delta_bytes": failure.delta_bytes,
        "allowed_bytes": failure.allowed_bytes,
        "p_value": failure.p_value,
    }


def build_label(build: Build) -> str:
    return f"{build.version}:{build.number}" if build.number else build.version


def comparison_json(
    comparison: BuildComparison,
    filters: SnapshotFilter,
    limit: GrowthLimit | None = None,
    min_delta: float = 0,
    window: slice = slice(None),
    sort: str = DEFAULT_SORT,
    descending: bool = True,
) -> Json:
    """GET /api/v1/apps/<id>/compare: `count` categories in all, the rows of those in `window`
    (significant changes first, then the biggest changes, unless sorted by a column), and,
    with a growth limit, the gate's verdict over all of them."""
    data = {
        "base": {"id": comparison.base.pk, "build": build_label(comparison.base),
                 "snapshots": len(comparison.base_snapshots)},
        "target": {"id": comparison.target.pk, "build": build_label(comparison.target),
                   "snapshots": len(comparison.target_snapshots)},
        "filters": filters.as_json(),
        "alpha": comparison.alpha,
        "total": compare_row_json(comparison.total),
        "count": len(comparison.values),
    }  # fmt: skip
    # the values go on with the two records that BuildCompareRow objects are made from
    ordered = sorted_values(comparison.values, sort, descending)
    data["rows"] = [dict(zip(ROW_FIELDS, v, strict=False)) for v in ordered[window]]
    if limit is not None:
        failures = gate_failures(comparison, limit, min_delta)
        data.update(
            max_growth=str(limit),
            min_delta=min_delta,
            failures=[failure_json(f) for f in failures],
            not_significant=[
                failure_json(f) for f in unproven_growth(comparison, limit, min_delta)
            ],
        )
        data["pass"] = not failures
    return data
