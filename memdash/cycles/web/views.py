"""Pages of retain cycles: an app's clusters, one cluster (with triage), the prefix settings."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Page, Paginator
from django.http import Http404, HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from memdash.core.auth import AuthenticatedHttpRequest
from memdash.core.logic.charts import occurrences_per_build_figure
from memdash.core.models import App
from memdash.core.reads.apps import is_app_admin, require_app_admin, require_app_contributor
from memdash.core.web.export import csv_response, csv_table
from memdash.core.web.http import app_or_404
from memdash.cycles import writes as services
from memdash.cycles.logic.clustering import (
    NON_RETAINING,
    cycle_from_json,
    is_system_class,
    marked,
)
from memdash.cycles.logic.drawing import draw_loop
from memdash.cycles.models import DEFAULT_SYSTEM_PREFIXES, Cluster
from memdash.cycles.reads import clusters as selectors
from memdash.cycles.reads.owners import owner_suggestion_for
from memdash.cycles.web.exports import (
    CLUSTER_HEADERS,
    MEMBER_HEADERS,
    OCCURRENCE_HEADERS,
    OWNER_HEADERS,
    cluster_rows,
    member_rows,
    occurrence_rows,
    owner_rows,
)
from memdash.cycles.web.forms import ClusterFilterForm, LinkToWeakenForm, SystemPrefixesForm
from memdash.triage.models import Status
from memdash.triage.web.forms import triage_form_or_redirect, triage_panel_context

PAGE_SIZE = 100
OCCURRENCES_PAGE = 50  # a cluster's occurrences listed per page


@login_required
def cluster_list(request: AuthenticatedHttpRequest, app_id: int) -> HttpResponseBase:
    app = app_or_404(request.user, app_id)
    form = ClusterFilterForm(app, request.GET or None)
    filters = form.filters()
    rows = selectors.cluster_rows(app, filters)
    if csv_table(request) is not None:
        return csv_response(f"{app.bundle_id}-retain-cycles", CLUSTER_HEADERS, cluster_rows(rows))
    # Paginator only takes len() and slices of the rows, which is all ClusterRows offers.
    page: Page[selectors.ClusterRow] = Paginator(rows, PAGE_SIZE).get_page(request.GET.get("page"))  # type: ignore[arg-type]
    context = {
        "app": app,
        "form": form,
        "filters": filters,
        "page": page,
        "sorts": selectors.SORTS,
        "by_status": selectors.cluster_counts_by_status(app, filters.include_system),
        "system_clusters": selectors.system_cluster_count(app),
        "dropped": selectors.dropped_total(app),
        "is_admin": is_app_admin(request.user, app),
    }
    return render(request, "cycles/cluster_list.html", context)


def _cluster_csv(app: App, cluster: Cluster, table: str) -> HttpResponseBase:
    """A cluster's tables: its member cycles (the default), its suggested owners (`owners`)."""
    name = f"{app.bundle_id}-retain-cycle-{cluster.pk}"
    if table == "members":
        rows = member_rows(selectors.member_cycles(cluster))
        return csv_response(f"{name}-members", MEMBER_HEADERS, rows)
    if table == "occurrences":
        rows = occurrence_rows(selectors.cluster_occurrences(cluster))
        return csv_response(f"{name}-occurrences", OCCURRENCE_HEADERS, rows)
    if table == "owners":
        prefixes = selectors.system_prefixes(app)
        owners = owner_suggestion_for(app.bundle_id, selectors.app_classes_of(cluster, prefixes))
        if owners is not None:
            return csv_response(f"{name}-owners", OWNER_HEADERS, owner_rows(owners))
    raise Http404("No such table")


def owned_links(
    links: list[tuple[str, tuple[str, ...], bool]], ownership: list[str]
) -> list[tuple[str, tuple[str, ...], bool, str, bool]]:
    """(class, via, the one to weaken, ownership, retains) of each link of a loop."""
    return [
        (cls, via, weak, own, own not in NON_RETAINING)
        for (cls, via, weak), own in zip(links, ownership, strict=True)
    ]


@login_required
@require_http_methods(["GET", "POST"])
def cluster_detail(
    request: AuthenticatedHttpRequest, app_id: int, cluster_id: int
) -> HttpResponseBase:
    app = app_or_404(request.user, app_id)
    cluster = selectors.cluster_for_app(app, cluster_id)
    if cluster is None:
        raise Http404("No such cluster")
    table = csv_table(request, "members") if request.method == "GET" else None
    if table is not None:
        return _cluster_csv(app, cluster, table)
    prefixes = selectors.system_prefixes(app)
    members = selectors.member_cycles(cluster)
    minimal = selectors.minimal_cycle(members, cluster)
    loops = [cycle_from_json(m.loop.canonical) for m in members]
    to_weaken = selectors.link_to_weaken_of(cluster, members, prefixes)
    weaken_form = LinkToWeakenForm(to_weaken.offered, initial=_weaken_initial(to_weaken))
    triage_form = None
    if request.method == "POST" and "weaken-link" in request.POST:
        require_app_contributor(request.user, app)  # a viewer only reads: 403
        weaken_form = LinkToWeakenForm(to_weaken.offered, request.POST)
        if weaken_form.is_valid():
            cluster.choose_link_to_weaken(request.user, weaken_form.chosen())
            messages.success(request, "Link to weaken saved.")
            return redirect(cluster.get_absolute_url() + "#weaken")
    else:
        triage_form, after_save = triage_form_or_redirect(request, cluster)
        if after_save is not None:
            return after_save
    weak = to_weaken.shown
    drawing = (
        draw_loop(
            minimal.links,
            lambda cls: is_system_class(cls, prefixes),
            weak.position if weak else None,
            minimal.ownership,
            NON_RETAINING,
        )
        if minimal
        else None
    )
    per_build = selectors.occurrences_per_build(cluster)
    occurrences = Paginator(selectors.cluster_occurrences(cluster), OCCURRENCES_PAGE)
    context = {
        "app": app,
        "cluster": cluster,
        # each member with its links, the one to weaken marked
        "members": [
            (m, owned_links(marked(loop, weak.reference if weak else None), m.ownership))
            for m, loop in zip(members, loops, strict=True)
        ],
        "reported_by": selectors.reported_by(cluster),
        "minimal": minimal,
        "weak": weak,
        "weak_chosen": to_weaken.chosen,
        "weaken_form": weaken_form if len(to_weaken.offered) > 1 else None,
        "drawing": drawing,
        "occurrences": occurrences.get_page(request.GET.get("page")),
        "chart": occurrences_per_build_figure(per_build),
        "owners": owner_suggestion_for(app.bundle_id, selectors.app_classes_of(cluster, prefixes)),
        **triage_panel_context(cluster, triage_form),
    }
    refused = triage_form is not None or weaken_form.is_bound
    return render(request, "cycles/cluster_detail.html", context, status=400 if refused else 200)


def _weaken_initial(to_weaken: selectors.LinkToWeaken) -> dict[str, int]:
    return {"link": to_weaken.shown.position} if to_weaken.shown else {}


@login_required
@require_http_methods(["GET", "POST"])
def cycle_settings(request: AuthenticatedHttpRequest, app_id: int) -> HttpResponse:
    app = app_or_404(request.user, app_id)
    is_admin = is_app_admin(request.user, app)
    own = selectors.own_system_prefixes(app)
    initial = {"prefixes": "\n".join(own)}
    form = SystemPrefixesForm(initial=initial)
    if request.method == "POST":
        require_app_admin(request.user, app)
        form = SystemPrefixesForm(request.POST)
        if form.is_valid():
            result = services.set_system_prefixes(app, form.cleaned_data["prefixes"])
            messages.success(
                request, f"Prefixes saved; {result.clusters} clusters after re-clustering."
            )
            return redirect("cycles:settings", app.pk)
    context = {
        "app": app,
        "form": form,
        "is_admin": is_admin,
        "effective": own or DEFAULT_SYSTEM_PREFIXES,
        "defaults": DEFAULT_SYSTEM_PREFIXES,
        "uses_defaults": not own,
        "statuses": Status.values,
    }
    return render(request, "cycles/settings.html", context, status=400 if form.errors else 200)
