"""The OS's own word beside the heuristic: the page and the JSON. Parse, call, render."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest
from django.http.response import HttpResponseBase
from django.shortcuts import render
from drf_spectacular.utils import extend_schema
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from memdash.core.models import App
from memdash.core.reads.apps import builds_in_release_order
from memdash.core.web.export import csv_response, csv_table
from memdash.core.web.http import app_or_404
from memdash.core.web.schema import array
from memdash.foom.logic.classify import RULE_NAMES, RULES_VERSION, Rate
from memdash.foom.logic.diagnostics import KIND_LABELS
from memdash.foom.logic.exits import VERDICT_NAMES, RuleAgreement
from memdash.foom.reads import diagnostics as diagnostic_reads
from memdash.foom.reads import exits as exit_selectors
from memdash.foom.web.charts import exits as exit_charts
from memdash.foom.web.charts import rates as charts
from memdash.foom.web.openapi import OS_EXITS

COUNTED_RULE = "memory kills beyond the day's FOOMs"  # rule 0 of agreement_from_counts


def rule_name(rule: int) -> str:
    return RULE_NAMES.get(rule, COUNTED_RULE) if rule else COUNTED_RULE


def said_instead(row: RuleAgreement) -> str:
    """What the OS said of the rule's FOOMs that it did not call memory kills."""
    ranked = sorted(row.other_verdicts.items(), key=lambda kv: (-kv[1], kv[0]))
    return ", ".join(f"{VERDICT_NAMES.get(v, v)} {n}" for v, n in ranked)


LATEST_HEADERS = [
    "payload_begins_at", "build_version", "build_number", "kind", "what_happened", "device_type",
    "os_version", "frames",
]  # fmt: skip
BUILD_HEADERS = [
    "build_version", "build_number", "sources", "heuristic_foom_rate", "foreground_exits",
    "foreground_memory_kills", "os_rate", "os_rate_low", "os_rate_high", "background_exits",
    "background_memory_kills", "background_rate",
]  # fmt: skip
AGREEMENT_HEADERS = [
    "build_version", "build_number", "basis", "rule", "rule_name", "compared", "fooms",
    "false_fooms", "os_said_instead", "missed_memory_kills",
]  # fmt: skip
CLASS_HEADERS = [
    "build_version", "build_number", "basis", "days", "class", "runs", "os_verdict", "exits",
    "heuristic_counted_more", "os_counted_more",
]  # fmt: skip


def _csv(app: App, table: str) -> HttpResponseBase:
    if table == "builds":
        rows = exit_selectors.os_build_rows(app)
        return csv_response(
            f"{app.bundle_id}-os-exits-builds",
            BUILD_HEADERS,
            (
                [
                    r.build.version, r.build.number, " ".join(sorted(r.counts.sources)),
                    r.heuristic.rate if r.heuristic else None, r.counts.foreground_exits,
                    r.counts.foreground_memory, *_rate_cells(r.counts.memory_rate),
                    r.counts.background_exits, r.counts.background_memory,
                    r.counts.background_rate.rate if r.counts.background_rate else None,
                ]
                for r in rows
            ),
        )  # fmt: skip
    if table == "diagnostics":
        return csv_response(
            f"{app.bundle_id}-os-diagnostics",
            ["build_version", "build_number", *KIND_LABELS, "all"],
            (
                [r.build.version, r.build.number, *r.cells, r.total]
                for r in diagnostic_reads.diagnostic_counts(app)
            ),
        )
    if table == "latest_diagnostics":
        return csv_response(
            f"{app.bundle_id}-os-latest-diagnostics",
            LATEST_HEADERS,
            (
                [
                    d.begins_at.isoformat(), d.build.version, d.build.number, d.kind,
                    d.summary_line, d.device_type, d.os_version, d.frames,
                ]
                for d in diagnostic_reads.latest_diagnostics(app)
            ),
        )  # fmt: skip
    if table == "agreement":
        return csv_response(
            f"{app.bundle_id}-os-exits-agreement",
            AGREEMENT_HEADERS,
            (
                [
                    a.build.version, a.build.number, a.basis, r.rule or None, rule_name(r.rule),
                    r.compared, r.fooms, r.false_fooms, said_instead(r), r.missed,
                ]
                for a in exit_selectors.agreement_by_build(app)
                for r in a.rules
            ),
        )  # fmt: skip
    if table == "classes":
        return csv_response(
            f"{app.bundle_id}-os-exits-classes",
            CLASS_HEADERS,
            (
                [
                    a.build.version, a.build.number, a.basis, a.days, c.cls, c.heuristic,
                    c.verdict, c.os, c.heuristic_surplus, c.os_surplus,
                ]
                for a in exit_selectors.agreement_by_build(app)
                for c in a.classes
            ),
        )  # fmt: skip
    raise Http404("No such table")


def _rate_cells(rate: Rate | None) -> list[float | None]:
    return [rate.rate, rate.low, rate.high] if rate else [None, None, None]


@login_required
def os_exits(request: HttpRequest, app_id: int) -> HttpResponseBase:
    app = app_or_404(request.user, app_id)
    table = csv_table(request, "builds")
    if table is not None:
        return _csv(app, table)
    rows = exit_selectors.os_build_rows(app)
    labels = [str(row.build) for row in rows]
    agreement = exit_selectors.agreement_by_build(app)
    context: dict[str, Any] = {
        "app": app,
        "rows": rows,
        "agreement": [
            (a, [(r, rule_name(r.rule), said_instead(r)) for r in a.rules]) for a in agreement
        ],
        "rules_version": RULES_VERSION,
        "rate_chart": charts.rate_trend_figure(
            labels,
            [row.heuristic for row in rows],
            os_rates=[row.counts.memory_rate for row in rows],
        )
        if rows
        else None,
        "day_chart": charts.day_rate_figure(exit_selectors.foom_and_os_days(app), per_user=False)
        if rows
        else None,
        **_memory_charts(app),
        "kind_labels": list(KIND_LABELS.values()),
        "diagnostic_rows": diagnostic_reads.diagnostic_counts(app),
        "latest_diagnostics": diagnostic_reads.latest_diagnostics(app),
    }
    return render(request, "foom/os_exits.html", context)


def _memory_charts(app: App) -> dict[str, Any]:
    builds = {b.pk: str(b) for b in builds_in_release_order(app)}
    points = exit_selectors.memory_points(app)
    labels = [label for pk, label in builds.items() if any(p.build_id == pk for p in points)]
    peak = [(builds[p.build_id], p.device_type, p.peak_bytes) for p in points if p.peak_bytes]
    suspended = [
        (builds[p.build_id], p.device_type, p.suspended_bytes) for p in points if p.suspended_bytes
    ]
    pss = [
        (builds[b], "in the foreground" if front else "in the background", kb * 1024)
        for b, front, kb in exit_selectors.memory_killed_pss(app)
    ]
    pss_labels = [label for label in builds.values() if any(row[0] == label for row in pss)]
    return {
        "peak_chart": exit_charts.memory_by_build_figure(peak, labels, "peak memory")
        if peak
        else None,
        "suspended_chart": exit_charts.memory_by_build_figure(
            suspended, labels, "average suspended memory"
        )
        if suspended
        else None,
        "pss_chart": exit_charts.memory_by_build_figure(pss, pss_labels, "PSS at the kill")
        if pss
        else None,
    }


# --- JSON ----------------------------------------------------------------------------------------


def _rate(prefix: str, rate: Rate | None) -> dict[str, float | None]:
    return {
        prefix: rate.rate if rate else None,
        f"{prefix}_low": rate.low if rate else None,
        f"{prefix}_high": rate.high if rate else None,
    }


def _rule_json(row: RuleAgreement) -> dict[str, Any]:
    return {
        "rule": row.rule or None,
        "rule_name": rule_name(row.rule),
        "compared": row.compared,
        "fooms": row.fooms,
        "os_memory": row.os_memory,
        "false_fooms": row.false_fooms,
        "missed": row.missed,
        "other_verdicts": row.other_verdicts,
    }


@extend_schema(
    summary="Per build: OS-reported exits (MetricKit, ApplicationExitInfo) beside the heuristic, "
    "with the agreement per rule",
    responses={200: array(OS_EXITS)},
)
@api_view(["GET"])
def api_os_exits(request: Request, app_id: int) -> Response:
    """Per build with OS-reported exits, in release order."""
    app = app_or_404(request.user, app_id)
    agreement = {a.build.pk: a for a in exit_selectors.agreement_by_build(app)}
    answer = []
    for row in exit_selectors.os_build_rows(app):
        c = row.counts
        agree = agreement.get(row.build.pk)
        answer.append(
            {
                "build": {"version": row.build.version, "number": row.build.number},
                "build_id": row.build.pk,
                "sources": sorted(c.sources),
                "reports": c.reports,
                "foreground_exits": c.foreground_exits,
                "foreground_memory": c.foreground_memory,
                **_rate("memory_rate", c.memory_rate),
                "background_exits": c.background_exits,
                "background_memory": c.background_memory,
                **_rate("background_rate", c.background_rate),
                **_rate("heuristic_foom_rate", row.heuristic),
                "foreground": c.foreground,
                "background": c.background,
                "reasons": c.reasons,
                "agreement": {
                    "basis": agree.basis,
                    "bound": agree.bound,
                    "days": agree.days,
                    "bound_days": agree.bound_days,
                    "rules_version": RULES_VERSION,
                    "rules": [_rule_json(r) for r in agree.rules],
                }
                if agree
                else None,
            }
        )
    return Response(answer)


# --- the CI gate over HTTP (core.gates; the site adds it to the compare API) ---------------------
