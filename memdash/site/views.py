"""The app settings page: core's keys and members, and each lens's own settings form."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from memdash.churn.forms import ChurnSettingsForm
from memdash.core import selectors, services
from memdash.core.auth import AuthenticatedHttpRequest
from memdash.core.forms import KeyForm, MemberForm
from memdash.core.models import IngestKey
from memdash.core.views import confirm_page


@login_required
def app_settings(request: AuthenticatedHttpRequest, app_id: int) -> HttpResponse:
    app = selectors.app_for_user(request.user, app_id)
    context = {
        "app": app,
        "keys": app.ingest_keys.order_by("-created_at"),
        "members": app.membership_set.select_related("user").order_by("user__username"),
        "key_form": KeyForm(),
        "member_form": MemberForm(),
        "churn_form": ChurnSettingsForm.for_app(app),
        "is_admin": selectors.is_app_admin(request.user, app),
        "new_secret": request.session.pop("new_ingest_key", None),
    }
    return render(request, "site/app_settings.html", context)


@login_required
@require_POST
def ingest_key_create(request: AuthenticatedHttpRequest, app_id: int) -> HttpResponse:
    app = selectors.app_for_user(request.user, app_id)
    selectors.require_app_admin(request.user, app)
    form = KeyForm(request.POST)
    if form.is_valid():
        _, secret = services.create_ingest_key(app, form.cleaned_data["name"])
        # Shown once on the next page, then gone (only the hash is stored).
        request.session["new_ingest_key"] = secret
    return redirect("site:app_settings", app.pk)


@login_required
@require_POST
def ingest_key_revoke(request: AuthenticatedHttpRequest, app_id: int, key_id: int) -> HttpResponse:
    app = selectors.app_for_user(request.user, app_id)
    selectors.require_app_admin(request.user, app)
    key = get_object_or_404(IngestKey, pk=key_id, app=app)
    if request.POST.get("confirm") != "1":
        return confirm_page(
            request,
            title="Revoke this ingest key?",
            message=f"Uploads with the key {key.prefix}… ({key.name or 'no name'}) to "
            f"{app.display_name} are refused from then on. This cannot be undone.",
            fields={},
            confirm_label="Revoke the key",
            cancel_url=reverse("site:app_settings", args=[app.pk]),
        )
    services.revoke_ingest_key(key)
    messages.success(request, "The key is revoked: uploads with it are refused from now on.")
    return redirect("site:app_settings", app.pk)


@login_required
@require_POST
def member_add(request: AuthenticatedHttpRequest, app_id: int) -> HttpResponse:
    app = selectors.app_for_user(request.user, app_id)
    selectors.require_app_admin(request.user, app)
    form = MemberForm(request.POST)
    if form.is_valid():
        services.add_member(app, form.cleaned_data["username"], form.cleaned_data["role"])
        messages.success(request, "Member saved.")
    else:
        # str(): ErrorList hands out its messages as text already; its stubs say it may not.
        messages.error(request, "; ".join(str(e) for errs in form.errors.values() for e in errs))
    return redirect("site:app_settings", app.pk)
