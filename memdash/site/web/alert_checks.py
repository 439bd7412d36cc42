"""What each kind of alert rule looks at, in the lens that owns the figures.

The alerts app sits below the lenses and runs whatever is registered for a kind
(`alerts.logic.kinds.add_checker`); the site, which sees every lens, says here how each kind is
judged, with the lenses' own rules: the Wilson bands of the FOOM pages, the CI gate's growth test
of build compare, the churn threshold of the churn page, the triage of clusters and leaks. Each
checker looks at the newest build with enough data against the one before it, so a new build
that is fine clears the last one's alert.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime

from django.urls import reverse

from memdash.alerts.logic.decide import percent, rate_alarm
from memdash.alerts.logic.kinds import Finding, RuleFigures
from memdash.allocations.reads.snapshots import builds_with_snapshots
from memdash.churn import reads as churn
from memdash.compare import writes as compare_writes
from memdash.compare.logic.gate import gate_failures
from memdash.compare.logic.stats import parse_alpha, parse_growth_limit
from memdash.compare.reads.builds import compare_builds
from memdash.compare.web.links import build_compare_url
from memdash.core.links import page_url
from memdash.core.logic.units import format_bytes
from memdash.core.models import App, Build
from memdash.core.reads.apps import builds_in_release_order
from memdash.cycles.models import Cluster
from memdash.foom.logic.classify import Rate
from memdash.foom.reads.exits import os_counts_by_build
from memdash.foom.reads.rates import build_trend
from memdash.leaks.models import LeakGroup, LeakTraceCluster
from memdash.triage.models import Status, Triaged


def _newest_pair(
    rates: Sequence[tuple[Build, Rate]], min_runs: int
) -> tuple[Rate | None, Build, Rate] | None:
    """The newest build whose rate rests on `min_runs` trials, and the rate of the build before
    it that has as many (None: no such build)."""
    enough = [(build, rate) for build, rate in rates if rate.trials >= max(min_runs, 1)]
    if not enough:
        return None
    (target, target_rate), before = enough[-1], enough[:-1]
    return (before[-1][1] if before else None), target, target_rate


def _rate_finding(
    rule: RuleFigures, rates: Sequence[tuple[Build, Rate]], what: str, link: Callable[[Build], str]
) -> list[Finding]:
    pair = _newest_pair(rates, rule.min_runs)
    if pair is None:
        return []
    base, build, rate = pair
    ceiling = None if rule.threshold_percent is None else rule.threshold_percent / 100
    reason = rate_alarm(base, rate, ceiling, rule.significant)
    if not reason:
        return []
    return [
        Finding(
            key=f"build:{build.pk}",
            title=f"{what} of {build}: {percent(rate.rate)}",
            text=f"{what} {reason} ({rate.successes} of {rate.trials})",
            link=link(build),
            figures={
                "build": str(build),
                "rate": rate.rate,
                "low": rate.low,
                "high": rate.high,
                "count": rate.successes,
                "of": rate.trials,
                "previous_rate": base.rate if base else None,
            },
        )  # fmt: skip
    ]


def foom_rate(app: App, rule: RuleFigures) -> list[Finding]:
    rates = [
        (row.build, rate)
        for row in build_trend(app)
        if (rate := row.counts.session_rate) is not None
    ]
    return _rate_finding(
        rule, rates, "FOOM rate", lambda build: page_url("build_foom", app.pk, build.pk)
    )


def os_kill_rate(app: App, rule: RuleFigures) -> list[Finding]:
    counts = os_counts_by_build(app)
    rates = [
        (build, rate)
        for build in builds_in_release_order(app)
        if build.pk in counts and (rate := counts[build.pk].memory_rate) is not None
    ]
    page = reverse("foom:os_exits", args=[app.pk])
    return _rate_finding(rule, rates, "OS memory-kill rate", lambda build: page)


def category_growth(app: App, rule: RuleFigures) -> list[Finding]:
    builds = builds_with_snapshots(app)
    if len(builds) < 2:
        return []
    base, target = builds[-2], builds[-1]
    limit = parse_growth_limit(rule.max_growth)
    summaries = compare_writes.build_summaries(base, target)
    comparison = compare_builds(base, target, None, None, summaries, rule.alpha)
    return [
        Finding(
            key=f"build:{target.pk}:category:{failure.category}"[:200],
            title=f"{failure.category} grew in {target}",
            text=(
                f"{format_bytes(failure.base_bytes)} → {format_bytes(failure.target_bytes)} per "
                f"snapshot (median) against {base}, past the limit of {rule.max_growth} "
                f"(allowed {format_bytes(failure.allowed_bytes)}), p = {failure.p_value:.3g}"
                if failure.p_value is not None
                else f"{format_bytes(failure.base_bytes)} → {format_bytes(failure.target_bytes)}"
            ),
            link=build_compare_url(app, base, target, category=failure.category),
            figures={
                "base": str(base),
                "target": str(target),
                "category": failure.category,
                "base_bytes": failure.base_bytes,
                "target_bytes": failure.target_bytes,
                "p_value": failure.p_value,
            },
        )  # fmt: skip
        for failure in gate_failures(comparison, limit)
    ]


def check_growth_figures(rule: RuleFigures) -> None:
    parse_growth_limit(rule.max_growth)
    parse_alpha(str(rule.alpha))


def _problems(items: Iterable[Triaged], what: str, since: datetime | None) -> list[Finding]:
    findings = []
    for item in items:
        name = str(item)
        if item.regression:
            key, title = f"{what}:{item.pk}:regression", f"{what[0].upper()}{what[1:]} back: {name}"
            text = f"marked fixed in {item.fixed_in_build}, seen again in {item.last_seen_build}"
        elif item.status == Status.NEW and (since is None or item.created_at >= since):  # type: ignore[attr-defined]
            key, title = f"{what}:{item.pk}", f"New {what}: {name}"
            text = f"first seen in {item.first_seen_build}"
        else:
            continue
        findings.append(Finding(key, title[:500], text, item.get_absolute_url(), {"id": item.pk}))
    return findings


def new_problem(app: App, rule: RuleFigures) -> list[Finding]:
    since = rule.created_at
    cycles = Cluster.objects.filter(app=app, is_current=True, system=False)
    groups = LeakGroup.objects.filter(app=app)
    traces = LeakTraceCluster.objects.filter(app=app, library=False)
    related = ("first_seen_build", "last_seen_build", "fixed_in_build")
    return (
        _problems(cycles.select_related(*related), "retain cycle", since)
        + _problems(groups.select_related(*related), "leak", since)
        + _problems(traces.select_related(*related), "LeakCanary leak", since)
    )


def churn_growth(app: App, rule: RuleFigures) -> list[Finding]:
    builds = churn.measured_builds(churn.scenario_series(app))
    if len(builds) < 2:
        return []
    base, target = builds[-2], builds[-1]
    link = reverse("churn:app_churn", args=[app.pk]) + f"?build={target.pk}"
    return [
        Finding(
            key=f"build:{target.pk}:scenario:{change.scenario}"[:200],
            title=f"Churn of {change.scenario} grew in {target}",
            text=f"median churn {change.previous:.0f} → {change.current:.0f} against {base}"
            + (f" ({change.change_percent:+.1f}%)" if change.change_percent is not None else ""),
            link=link,
            figures={
                "scenario": change.scenario,
                "previous": change.previous,
                "current": change.current,
            },
        )
        for change in churn.churn_regressions(app, base, target)
    ]
