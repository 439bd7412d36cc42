"""The runs of one scenario in one build: what each run measured (device, time, elapsed, churn,
calls per allocator function), the figures behind the churn page's medians."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest
from django.http.response import HttpResponseBase
from django.shortcuts import render

from memdash.churn import reads as selectors
from memdash.churn.models import ScenarioFunction, ScenarioRun
from memdash.churn.web.exports import run_headers, run_rows
from memdash.churn.web.views import chosen_build
from memdash.core.web.export import csv_response, csv_table
from memdash.core.web.http import app_or_404

RUNS_PER_PAGE = 100


def _by_column(run: ScenarioRun, functions: list[str]) -> list[ScenarioFunction | None]:
    by_name = {f.function: f for f in run.functions.all()}
    return [by_name.get(name) for name in functions]


@login_required
def scenario_runs(request: HttpRequest, app_id: int, scenario_id: int) -> HttpResponseBase:
    app = app_or_404(request.user, app_id)
    scenario = selectors.scenario_for_app(app, scenario_id)
    if scenario is None:
        raise Http404("No such scenario")
    builds = selectors.scenario_builds(scenario)
    build = chosen_build(builds, request.GET.get("build"))
    if build is None:
        raise Http404("This scenario has no runs")
    runs = selectors.scenario_runs(scenario, build)
    functions = selectors.scenario_functions(scenario, build)
    if csv_table(request) is not None:
        name = f"{app.bundle_id}-churn-{scenario.name}-{build.version}-{build.number}-runs"
        return csv_response(name, run_headers(functions), run_rows(runs, functions))
    page = Paginator(runs, RUNS_PER_PAGE).get_page(request.GET.get("page"))
    context = {
        "app": app,
        "scenario": scenario,
        "builds": builds,
        "build": build,
        "functions": functions,
        "page": page,
        # each run's figures per function, in the order of the table's columns
        "rows": [{"run": r, "functions": _by_column(r, functions)} for r in page],
    }
    return render(request, "churn/scenario_runs.html", context)
