"""Pages of the core domain: the app list and API tokens."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods
from rest_framework.decorators import api_view
from rest_framework.response import Response

from memdash.core import selectors, services
from memdash.core.forms import KeyForm
from memdash.core.models import ApiToken
from memdash.core.numbers import whole_number


@login_required
def app_list(request):
    apps = selectors.apps_for_user(request.user).order_by("bundle_id", "platform")
    return render(request, "core/app_list.html", {"apps": apps})


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
