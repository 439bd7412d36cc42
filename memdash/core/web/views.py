"""Pages of the core domain: the app list (with the user's invitations) and API tokens."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST
from drf_spectacular.utils import extend_schema
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from memdash.core.auth import AuthenticatedHttpRequest
from memdash.core.logic.numbers import whole_number
from memdash.core.models import PLATFORMS, ApiToken
from memdash.core.reads import apps as selectors
from memdash.core.web.forms import KeyForm, error_text
from memdash.core.web.http import found
from memdash.core.web.schema import INT, STR, array, obj
from memdash.core.writes import apps as services


@login_required
def app_list(request: AuthenticatedHttpRequest) -> HttpResponse:
    apps = selectors.apps_for_user(request.user).order_by("bundle_id", "platform")
    invitations = selectors.invitations_for_user(request.user)
    return render(request, "core/app_list.html", {"apps": apps, "invitations": invitations})


@login_required
@require_POST
def invitation_answer(request: AuthenticatedHttpRequest, invitation_id: int) -> HttpResponse:
    """Accept (`accept=1`) or decline an invitation addressed to the user's name."""
    with found():
        invitation = selectors.invitations_for_user(request.user).get(pk=invitation_id)
    if request.POST.get("accept") == "1":
        services.accept_invitation(invitation, request.user)
        messages.success(request, f"You are now a member of {invitation.app.display_name}.")
    else:
        services.drop_invitation(invitation)
        messages.info(request, "Invitation declined.")
    return redirect("core:app_list")


@login_required
@require_http_methods(["GET", "POST"])
def tokens(request: AuthenticatedHttpRequest) -> HttpResponse:
    if request.method == "POST":
        if "revoke" in request.POST:
            token_id = whole_number(request.POST["revoke"])
            token = get_object_or_404(ApiToken, pk=token_id or 0, user=request.user)
            if request.POST.get("confirm") != "1":
                return confirm_page(
                    request,
                    title="Revoke this API token?",
                    message=f"Requests with the token {token.prefix}… ({token.name or 'no name'})"
                    " are refused from then on. This cannot be undone.",
                    fields={"revoke": str(token.pk)},
                    confirm_label="Revoke the token",
                    cancel_url=reverse("core:tokens"),
                )
            services.revoke_api_token(token)
            messages.success(request, "The token is revoked.")
        else:
            form = KeyForm(request.POST)  # a name of up to 100 characters, as for a key
            if not form.is_valid():
                messages.error(request, error_text(form))
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


def confirm_page(
    request: HttpRequest,
    *,
    title: str,
    message: str,
    fields: dict[str, str],
    confirm_label: str,
    cancel_url: str,
    action: str = "",
) -> HttpResponse:
    """The second step of an action that cannot be undone (revoking a token or a key): the same
    POST again with `confirm=1`. With JavaScript, static/js/keys.js asks in a dialog instead."""
    context = {
        "title": title,
        "message": message,
        "fields": fields,
        "confirm_label": confirm_label,
        "cancel_url": cancel_url,
        "action": action,
    }
    return render(request, "core/confirm.html", context)


PLATFORM = {"type": "string", "enum": PLATFORMS}
APP = obj({"id": INT, "bundle_id": STR, "platform": PLATFORM, "name": STR})


@extend_schema(summary="The apps the caller may see", responses={200: array(APP)})
@api_view(["GET"])
def api_apps(request: Request) -> Response:
    """The apps the caller may see."""
    apps = selectors.apps_for_user(request.user).order_by("bundle_id")
    return Response(
        [
            {"id": a.pk, "bundle_id": a.bundle_id, "platform": a.platform, "name": a.name}
            for a in apps
        ]
    )
