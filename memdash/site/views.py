"""The app settings page: core's keys and members, and each lens's own settings form."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from memdash.churn.forms import ChurnSettingsForm
from memdash.core import selectors, services
from memdash.core.forms import KeyForm, MemberForm
from memdash.core.models import IngestKey


@login_required
def app_settings(request, app_id: int):
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
def ingest_key_create(request, app_id: int):
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
def ingest_key_revoke(request, app_id: int, key_id: int):
    app = selectors.app_for_user(request.user, app_id)
    selectors.require_app_admin(request.user, app)
    services.revoke_ingest_key(get_object_or_404(IngestKey, pk=key_id, app=app))
    messages.success(request, "The key is revoked: uploads with it are refused from now on.")
    return redirect("site:app_settings", app.pk)


@login_required
@require_POST
def member_add(request, app_id: int):
    app = selectors.app_for_user(request.user, app_id)
    selectors.require_app_admin(request.user, app)
    form = MemberForm(request.POST)
    if form.is_valid():
        services.add_member(app, form.cleaned_data["username"], form.cleaned_data["role"])
        messages.success(request, "Member saved.")
    else:
        messages.error(request, "; ".join(e for errs in form.errors.values() for e in errs))
    return redirect("site:app_settings", app.pk)
