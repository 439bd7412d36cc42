"""Pages of the core domain: the app list, an app's settings (keys, members), API tokens."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST
from rest_framework.decorators import api_view
from rest_framework.response import Response

from memdash.core import selectors, services
from memdash.core.forms import ChurnSettingsForm, KeyForm, MemberForm
from memdash.core.models import ApiToken, IngestKey
from memdash.core.numbers import whole_number


@login_required
def app_list(request):
    apps = selectors.apps_for_user(request.user).order_by("bundle_id", "platform")
    return render(request, "core/app_list.html", {"apps": apps})


def _require_admin(user, app) -> None:
    if not selectors.is_app_admin(user, app):
        raise PermissionDenied("Only the app's admins can change its settings.")


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
    return render(request, "core/app_settings.html", context)


@login_required
@require_POST
def ingest_key_create(request, app_id: int):
    app = selectors.app_for_user(request.user, app_id)
    _require_admin(request.user, app)
    form = KeyForm(request.POST)
    if form.is_valid():
        _, secret = services.create_ingest_key(app, form.cleaned_data["name"])
        # Shown once on the next page, then gone (only the hash is stored).
        request.session["new_ingest_key"] = secret
    return redirect("core:app_settings", app.pk)


@login_required
@require_POST
def ingest_key_revoke(request, app_id: int, key_id: int):
    app = selectors.app_for_user(request.user, app_id)
    _require_admin(request.user, app)
    services.revoke_ingest_key(get_object_or_404(IngestKey, pk=key_id, app=app))
    messages.success(request, "The key is revoked: uploads with it are refused from now on.")
    return redirect("core:app_settings", app.pk)


@login_required
@require_POST
def member_add(request, app_id: int):
    app = selectors.app_for_user(request.user, app_id)
    _require_admin(request.user, app)
    form = MemberForm(request.POST)
    if form.is_valid():
        services.add_member(app, form.cleaned_data["username"], form.cleaned_data["role"])
        messages.success(request, "Member saved.")
    else:
        messages.error(request, "; ".join(e for errs in form.errors.values() for e in errs))
    return redirect("core:app_settings", app.pk)


@login_required
@require_POST
def churn_settings(request, app_id: int):
    app = selectors.app_for_user(request.user, app_id)
    _require_admin(request.user, app)
    form = ChurnSettingsForm.for_app(app, request.POST)
    if form.is_valid():
        services.set_churn_settings(app, form.cleaned_data)
        messages.success(request, "Churn weights saved: every build is priced with them now.")
    else:
        messages.error(request, "; ".join(e for errs in form.errors.values() for e in errs))
    return redirect("core:app_settings", app.pk)


@login_required
@require_http_methods(["GET", "POST"])
def tokens(request):
    if request.method == "POST":
        if "revoke" in request.POST:
            token_id = whole_number(request.POST["revoke"])
            token = get_object_or_404(ApiToken, pk=token_id or 0, user=request.user)
            services.revoke_api_token(token)
        else:
            form = KeyForm(request.POST)  # a name of up to 100 characters, as for a key
            if not form.is_valid():
                messages.error(request, "; ".join(e for errs in form.errors.values() for e in errs))
                return redirect("core:tokens")
            _, secret = services.create_api_token(request.user, form.cleaned_data["name"])
            request.session["new_api_token"] = secret
        return redirect("core:tokens")
    return render(
        request,
        "core/tokens.html",
        {
            "tokens": request.user.api_tokens.order_by("-created_at"),
            "new_secret": request.session.pop("new_api_token", None),
        },
    )


@api_view(["GET"])
def api_apps(request):
    """The apps the caller may see."""
    apps = selectors.apps_for_user(request.user).order_by("bundle_id")
    return Response(
        [
            {"id": a.pk, "bundle_id": a.bundle_id, "platform": a.platform, "name": a.name}
            for a in apps
        ]
    )
