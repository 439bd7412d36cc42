"""FOOM pages and JSON: parse the request, call the selectors, render."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest
from django.http.response import HttpResponseBase
from django.shortcuts import get_object_or_404, redirect, render
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from memdash.core.logic.numbers import MAX_INT64, whole_number
from memdash.core.models import App, Build
from memdash.core.web.export import csv_response, csv_table
from memdash.core.web.http import app_or_404, found
from memdash.core.web.schema import array, number_pattern
from memdash.foom.logic.classify import RULES_VERSION, Rate
from memdash.foom.models import Session
from memdash.foom.reads import exits as exit_selectors
from memdash.foom.reads import rates as selectors
from memdash.foom.web.charts import rates as charts
from memdash.foom.web.exports import (
    BUILD_HEADERS,
    CATEGORY_HEADERS,
    CLASS_HEADERS,
    FACT_HEADERS,
    RUN_HEADERS,
    SESSION_SNAPSHOT_HEADERS,
    build_rows,
    category_rows,
    class_rows,
    fact_rows,
    run_rows,
    session_snapshot_rows,
)
from memdash.foom.web.openapi import BUILD_FOOM, SESSION

SESSIONS_PER_PAGE = 50


@login_required
def app_foom(request: HttpRequest, app_id: int) -> HttpResponseBase:
    app = app_or_404(request.user, app_id)
    every_build = selectors.build_trend(app)
    trend = selectors.builds_with_sessions(every_build)
    if csv_table(request) is not None:
        return csv_response(f"{app.bundle_id}-foom-builds", BUILD_HEADERS, build_rows(trend))
    os_counts = exit_selectors.os_counts_by_build(app)  # the OS's own word, where it spoke
    # The charts: every build (and day) with runs or with the OS's word, in release order.
    charted = [row for row in every_build if row.counts.sessions or row.build.pk in os_counts]
    context = {
        "app": app,
        "trend": trend,
        "rules_version": RULES_VERSION,
        "has_os_exits": bool(os_counts),
        "build_chart": charts.rate_trend_figure(
            [str(row.build) for row in charted],
            [row.counts.session_rate for row in charted],
            [row.counts.user_rate for row in charted],
            os_rates=[
                os_counts[row.build.pk].memory_rate if row.build.pk in os_counts else None
                for row in charted
            ]
            if os_counts
            else None,
        )
        if charted
        else None,
        "class_chart": charts.class_breakdown_figure(
            [str(row.build) for row in trend], [row.counts.class_counts for row in trend]
        )
        if trend
        else None,
        "day_chart": charts.day_rate_figure(exit_selectors.foom_and_os_days(app), per_user=False),
    }
    return render(request, "foom/app_foom.html", context)


@login_required
def build_foom(request: HttpRequest, app_id: int, build_id: int) -> HttpResponseBase:
    app = app_or_404(request.user, app_id)
    build = get_object_or_404(Build, pk=build_id, app=app)
    table = csv_table(request, "runs")
    if table is not None:
        return build_foom_csv(app, build, table)
    page = Paginator(selectors.foom_sessions(build), SESSIONS_PER_PAGE).get_page(
        request.GET.get("page")
    )
    sessions = list(page.object_list)
    snapshots = selectors.snapshots_by_session(app, [s.session_id for s in sessions])
    footprints = selectors.foom_footprints_by_model(build)
    snapshot_count, categories = selectors.foom_snapshot_categories(build)
    counts = selectors.build_counts(build)
    context = {
        "app": app,
        "build": build,
        "counts": counts,
        "os_counts": exit_selectors.os_counts_of_build(build),
        "classes": selectors.ordered_classes(counts.class_counts),
        "page": page,
        "rows": [(s, snapshots.get(s.session_id, [])) for s in sessions],
        "footprint_chart": charts.footprint_by_model_figure(footprints) if footprints else None,
        "day_chart": charts.day_rate_figure(
            exit_selectors.foom_and_os_days(app, build), per_user=True
        ),
        "snapshot_count": snapshot_count,
        "categories": categories,
    }
    return render(request, "foom/build_foom.html", context)


def build_foom_csv(app: App, build: Build, table: str) -> HttpResponseBase:
    """A table of the build's FOOM page as CSV: `runs` (every FOOM run), `classes`, `categories`."""
    name = f"{app.bundle_id}-{build.version}-{build.number}-foom-{table}"
    if table == "classes":
        counts = selectors.build_counts(build)
        classes = selectors.ordered_classes(counts.class_counts)
        return csv_response(name, CLASS_HEADERS, class_rows(classes, counts.sessions))
    if table == "categories":
        _, categories = selectors.foom_snapshot_categories(build)
        return csv_response(name, CATEGORY_HEADERS, category_rows(categories))
    if table == "runs":
        return csv_response(name, RUN_HEADERS, run_rows(app, selectors.foom_sessions(build)))
    raise Http404("No such table")


@login_required
def session_detail(request: HttpRequest, app_id: int, session_pk: int) -> HttpResponseBase:
    with found():
        session = selectors.session_for_user(request.user, app_id, session_pk)
    by_session = selectors.snapshots_by_session(session.app, [session.session_id])
    snapshots = by_session.get(session.session_id, [])
    table = csv_table(request, "facts")
    name = f"{session.app.bundle_id}-run-{session.session_id}"
    if table == "facts":
        return csv_response(f"{name}-facts", FACT_HEADERS, fact_rows(session))
    if table == "snapshots":
        rows = session_snapshot_rows(snapshots)
        return csv_response(f"{name}-snapshots", SESSION_SNAPSHOT_HEADERS, rows)
    if table is not None:
        raise Http404("No such table")
    return render(
        request,
        "foom/session_detail.html",
        {"app": session.app, "session": session, "snapshots": snapshots},
    )


@login_required
def session_by_id(request: HttpRequest, app_id: int, session_id: str) -> HttpResponseBase:
    """The run a snapshot names by its uploaded `session` id (pages of other floors link here
    by kind, `session`): its page, or a 404 when no run with that id was reported."""
    app = app_or_404(request.user, app_id)
    session = selectors.session_by_uploaded_id(app, session_id)
    if session is None:
        raise Http404("No run with this session id was reported to FOOM")
    return redirect(session.get_absolute_url())


# --- JSON ----------------------------------------------------------------------------------------


def _rate_fields(prefix: str, rate: Rate | None) -> dict[str, float | None]:
    return {
        prefix: rate.rate if rate else None,
        f"{prefix}_low": rate.low if rate else None,
        f"{prefix}_high": rate.high if rate else None,
    }


def build_foom_json(row: selectors.BuildFoom) -> dict[str, Any]:
    c = row.counts
    return {
        "build": {"version": row.build.version, "number": row.build.number},
        "build_id": row.build.pk,
        "sessions": c.sessions,
        "classified": c.classified,
        "rate_sessions": c.rate_sessions,
        "foom": c.foom,
        **_rate_fields("foom_rate", c.session_rate),
        "devices": c.classified_devices,
        "devices_seen": c.devices,
        "foom_devices": c.foom_devices,
        **_rate_fields("user_rate", c.user_rate),
        "classes": c.class_counts,
    }


@extend_schema(
    summary="FOOM per build: run counts, FOOM rates per session and per user (95% Wilson), classes",
    responses={200: array(BUILD_FOOM)},
)
@api_view(["GET"])
def api_app_foom(request: Request, app_id: int) -> Response:
    """Per build, in release order: run counts, FOOM rates with 95% Wilson intervals, classes."""
    app = app_or_404(request.user, app_id)
    trend = selectors.builds_with_sessions(selectors.build_trend(app))
    return Response([build_foom_json(row) for row in trend])


def session_json(session: Session, request: Request) -> dict[str, Any]:
    snapshots = selectors.snapshots_by_session(session.app, [session.session_id])
    end = None
    if session.has_end:
        end = {
            "state": session.end_state,
            "active_for_ms": session.active_for_ms,
            "crashed": session.crashed,
            "main_thread_blocked": session.main_thread_blocked,
            "user_quit": session.user_quit,
            "exit_called": session.exit_called,
            "debugger": session.debugger,
            "simulator": session.simulator,
            "extension": session.extension,
            "thermal_critical": session.thermal_critical,
            "os_exit_reason": session.os_exit_reason or None,
            "memory_warnings": session.memory_warnings,
            "footprint_bytes": session.footprint_bytes,
            "peak_footprint_bytes": session.peak_footprint_bytes,
        }
    return {
        "id": session.session_id,
        "app": session.app_id,
        "build": {"version": session.build.version, "number": session.build.number},
        "device": {"id": session.device.device_key, "model": session.device.model},
        "os": session.os,
        "binary_uuid": session.binary_uuid,
        "boot_time": session.boot_time,
        "started_at": session.started_at,
        "last_seen_at": session.last_seen_at,
        "bot": session.bot,
        "end": end,
        "class": session.classification,
        "rule": session.rule,
        "rule_text": session.rule_text,
        "rule_name": session.rule_name,
        "rules_version": session.rules_version or None,
        "classified_at": session.classified_at,
        "url": request.build_absolute_uri(session.get_absolute_url()),
        "snapshots": [
            {
                "id": s.pk,
                "captured_at": s.captured_at,
                "trigger": s.trigger,
                "url": request.build_absolute_uri(s.get_absolute_url()),
            }
            for s in snapshots.get(session.session_id, [])
        ],
    }


@extend_schema(
    summary="One run (session) with its class, the rule that decided it and the rules version",
    parameters=[
        OpenApiParameter(
            "app",
            {"type": "string", "pattern": f"^{number_pattern(MAX_INT64)}$"},
            description="the app's id, when two apps share the session id",
        )
    ],
    responses={200: SESSION},
)
@api_view(["GET"])
def api_session(request: Request, session_ref: str) -> Response:
    """One run by its uploaded id (`?app=<id>` when two apps share it), with its class, the rule
    that decided it and the rules version."""
    app_text = request.query_params.get("app") or None  # empty: absent, as every parameter
    app_id = whole_number(app_text)
    if app_text is not None and app_id is None:
        raise Http404("No such session")
    matches = selectors.sessions_for_user(request.user, session_ref, app_id)
    if not matches:
        raise Http404("No such session")
    if len(matches) > 1:
        return Response(
            {"error": "several of your apps have a session with this id; add ?app=<app id>"},
            status=400,
        )
    return Response(session_json(matches[0], request))
