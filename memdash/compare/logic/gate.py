"""The CI gate over build compare's rows (pure: plain data in, plain data out, no Django): which
categories' median per-snapshot persistent bytes grew past a limit, significantly.

Growth past the limit fails the gate only when the rank test tells the builds apart (p below
alpha, as the status "grown" says): a median that moved by chance between a few snapshots is
reported (`unproven_growth`), not failed on."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import chain

from memdash.compare.logic.build_rows import (
    BASE_MEDIAN,
    P_VALUE,
    TARGET_MEDIAN,
    BuildCompareRow,
    BuildComparison,
    RowValues,
)
from memdash.compare.logic.stats import DEFAULT_ALPHA, GrowthLimit

# (category, base median bytes, target median bytes, p-value): what the gate reads of a row
GateItem = tuple[str, float | None, float | None, float | None]


@dataclass(frozen=True, slots=True)
class GateFailure:
    category: str
    base_bytes: float  # the base build's median per-snapshot persistent bytes
    target_bytes: float
    delta_bytes: float
    allowed_bytes: float
    p_value: float | None


def check_growth(
    rows: Iterable[BuildCompareRow],
    limit: GrowthLimit,
    min_delta: float = 0,
    alpha: float = DEFAULT_ALPHA,
) -> list[GateFailure]:
    """The rows whose median per-snapshot persistent bytes grew significantly (rank test
    p < alpha) by more than the limit allows (and by more than `min_delta` bytes, a floor below
    which growth is noise: a percentage of a 48-byte category is). The median, not the mean, so
    one outlier device neither fails nor passes a build on its own."""
    return check_growth_of(
        ((r.category, r.bytes.base.median, r.bytes.target.median, r.bytes.p_value) for r in rows),
        limit,
        min_delta,
        alpha,
    )


def gate_items(values: Iterable[RowValues]) -> Iterator[GateItem]:
    """What `check_growth_of` reads of rows given as values (`compare_build_summaries`)."""
    for v in values:
        yield v[0], v[BASE_MEDIAN], v[TARGET_MEDIAN], v[P_VALUE]


def _past_limit(
    items: Iterable[GateItem], limit: GrowthLimit, min_delta: float
) -> Iterator[GateFailure]:
    """The items whose median grew past the limit (and the floor), significant or not."""
    for category, base, target, p_value in items:
        base_median = base or 0.0
        target_median = target or 0.0
        delta = target_median - base_median
        if delta > min_delta and limit.exceeded(base_median, target_median):
            yield GateFailure(
                category=category,
                base_bytes=base_median,
                target_bytes=target_median,
                delta_bytes=delta,
                allowed_bytes=limit.allowed(base_median),
                p_value=p_value,
            )


def _significant(failure: GateFailure, alpha: float) -> bool:
    return failure.p_value is not None and failure.p_value < alpha


def check_growth_of(
    items: Iterable[GateItem],
    limit: GrowthLimit,
    min_delta: float = 0,
    alpha: float = DEFAULT_ALPHA,
) -> list[GateFailure]:
    """`check_growth` of (category, base median, target median, p-value) items."""
    failures = [f for f in _past_limit(items, limit, min_delta) if _significant(f, alpha)]
    failures.sort(key=lambda f: -f.delta_bytes)
    return failures


def _items(comparison: BuildComparison) -> Iterable[GateItem]:
    """The chosen categories, or the whole heap and every category."""
    items: Iterable[GateItem] = gate_items(comparison.values)
    if comparison.categories is None:
        sizes = comparison.total.bytes
        whole = (comparison.total.category, sizes.base.median, sizes.target.median, sizes.p_value)
        items = chain([whole], items)
    return items


def gate_failures(
    comparison: BuildComparison, limit: GrowthLimit, min_delta: float = 0
) -> list[GateFailure]:
    """What the CI gate fails on: significant growth (at the comparison's alpha) past the limit
    of the chosen categories, or of the whole heap and every category."""
    return check_growth_of(_items(comparison), limit, min_delta, comparison.alpha)


def unproven_growth(
    comparison: BuildComparison, limit: GrowthLimit, min_delta: float = 0
) -> list[GateFailure]:
    """Growth past the limit that the rank test does not find significant: reported beside the
    gate's verdict, never failed on."""
    unproven = [
        f
        for f in _past_limit(_items(comparison), limit, min_delta)
        if not _significant(f, comparison.alpha)
    ]
    unproven.sort(key=lambda f: -f.delta_bytes)
    return unproven
