"""The churn page: per scenario, churn per build next to elapsed time, ranked and flagged."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from memdash.churn import reads as selectors
from memdash.churn import writes as services
from memdash.churn.web import charts
from memdash.churn.web.exports import (
    FLAGGED_HEADERS,
    RANKING_HEADERS,
    SCENARIO_HEADERS,
    flagged_rows,
    ranking_rows,
    scenario_rows,
)
from memdash.churn.web.forms import ChurnSettingsForm
from memdash.core.auth import AuthenticatedHttpRequest
from memdash.core.links import page_url
from memdash.core.logic.numbers import whole_number
from memdash.core.models import App, Build
from memdash.core.reads.apps import require_app_admin
from memdash.core.web.export import csv_response, csv_table
from memdash.core.web.http import app_or_404

SCENARIO_TABLE = "scenario-"  # `table=scenario-<id>`: one scenario's builds as CSV


def chosen_build(builds: list[Build], value: str | None) -> Build | None:
    """The build asked for in ?build=, else the newest measured one."""
    wanted = whole_number(value)
    for build in builds:
        if build.pk == wanted:
            return build
    return builds[-1] if builds else None


def _churn_csv(
    app: App,
    table: str,
    build: Build | None,
    ranking: list[dict[str, Any]],
    series: list[selectors.ScenarioSeries],
) -> HttpResponseBase:
    """The churn page's tables: the chosen build's ranking (the default), the flagged builds
    (`table=flagged`), one scenario's builds (`table=scenario-<id>`)."""
    name = f"{app.bundle_id}-churn"
    if table == "ranking":
        name += f"-{build.version}-{build.number}" if build else ""
        return csv_response(name, RANKING_HEADERS, ranking_rows(ranking))
    if table == "flagged":
        flagged = selectors.flagged_builds(series)
        return csv_response(f"{name}-flagged", FLAGGED_HEADERS, flagged_rows(flagged))
    if table.startswith(SCENARIO_TABLE):
        wanted = whole_number(table.removeprefix(SCENARIO_TABLE))
        for s in series:
            if s.scenario.pk == wanted:
                rows = scenario_rows(s)
                return csv_response(f"{name}-{s.scenario.name}", SCENARIO_HEADERS, rows)
    raise Http404("No such table")


@login_required
def app_churn(request: HttpRequest, app_id: int) -> HttpResponseBase:
    app = app_or_404(request.user, app_id)
    series = selectors.scenario_series(app)
    builds = selectors.measured_builds(series)
    build = chosen_build(builds, request.GET.get("build"))
    ranking = []
    if build is not None:
        for change in selectors.ranked_changes(series, build):
            scenario = next(s for s in series if s.scenario.name == change.scenario)
            ranking.append(
                {
                    "change": change,
                    "measured": scenario.for_build(build),
                    "scenario": scenario.scenario,
                }
            )
    table = csv_table(request, "ranking")
    if table is not None:
        return _churn_csv(app, table, build, ranking, series)
    context = {
        "app": app,
        "series": [
            {
                "series": s,
                "chart": charts.scenario_figure(s),
                "chart_id": f"churn-{s.scenario.pk}",
                "csv_table": f"{SCENARIO_TABLE}{s.scenario.pk}",
            }
            for s in series
        ],
        "builds": builds,
        "build": build,
        "ranking": ranking,
        "flagged": selectors.flagged_builds(series),
        "weights": sorted(selectors.valid_weights(app).items()),
        "threshold": selectors.app_threshold_percent(app),
    }
    return render(request, "churn/app_churn.html", context)


@login_required
@require_POST
def churn_settings(request: AuthenticatedHttpRequest, app_id: int) -> HttpResponse:
    app = app_or_404(request.user, app_id)
    require_app_admin(request.user, app)
    form = ChurnSettingsForm.for_app(app, request.POST)
    if form.is_valid():
        services.set_churn_settings(app, form.cleaned_data)
        messages.success(request, "Churn weights saved: every build is priced with them now.")
    else:
        # str(): ErrorList hands out its messages as text already; its stubs say it may not.
        messages.error(request, "; ".join(str(e) for errs in form.errors.values() for e in errs))
    return redirect(page_url("app_settings", app.pk))
