"""The app settings page: core's keys and members, and each lens's own settings form; the
login page's answer while locked out."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import AuthenticationForm
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from memdash.alerts import reads as alert_reads
from memdash.alerts.web.forms import DestinationForm, RuleForm
from memdash.churn.web.forms import ChurnSettingsForm
from memdash.core.auth import AuthenticatedHttpRequest
from memdash.core.models import IngestKey, Membership
from memdash.core.reads import apps as selectors
from memdash.core.web.forms import InviteForm, KeyForm, RoleForm, error_text
from memdash.core.web.http import app_or_404, found
from memdash.core.web.views import confirm_page
from memdash.core.writes import apps as services
from memdash.triage.reads import new_issue_template
from memdash.triage.web.forms import TrackerForm
from memdash.triage.writes import set_tracker_template


@login_required
def app_settings(request: AuthenticatedHttpRequest, app_id: int) -> HttpResponse:
    app = app_or_404(request.user, app_id)
    context = {
        "app": app,
        "keys": app.ingest_keys.order_by("-created_at"),
        "members": selectors.app_memberships(app),
        "invitations": selectors.app_invitations(app),
        "roles": Membership.ROLES,
        "key_form": KeyForm(),
        "invite_form": InviteForm(),
        "churn_form": ChurnSettingsForm.for_app(app),
        "alert_rules": alert_reads.rules_of(app),
        "alert_destinations": alert_reads.destinations_of(app),
        # Ids of their own: the key form above has a `name` field too.
        "rule_form": RuleForm(auto_id="rule_%s"),
        "tracker_form": TrackerForm(
            initial={"new_issue_url": new_issue_template(app)}, auto_id="tracker_%s"
        ),
        "destination_form": DestinationForm(auto_id="destination_%s"),
        "is_admin": selectors.is_app_admin(request.user, app),
        "new_secret": request.session.pop("new_ingest_key", None),
    }
    return render(request, "site/app_settings.html", context)


@login_required
@require_POST
def ingest_key_create(request: AuthenticatedHttpRequest, app_id: int) -> HttpResponse:
    app = app_or_404(request.user, app_id)
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
    app = app_or_404(request.user, app_id)
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


def _members_page(app_id: int) -> HttpResponse:
    return redirect(reverse("site:app_settings", args=[app_id]) + "#members")


@login_required
@require_POST
def member_invite(request: AuthenticatedHttpRequest, app_id: int) -> HttpResponse:
    """Invite a username. The answer is the same whether or not such a user exists: the admin
    sees a pending invitation either way, which the user (if any) accepts on the apps page."""
    app = app_or_404(request.user, app_id)
    selectors.require_app_admin(request.user, app)
    form = InviteForm(request.POST)
    if not form.is_valid():
        messages.error(request, error_text(form))
        return _members_page(app.pk)
    username, role = form.cleaned_data["username"], form.cleaned_data["role"]
    try:
        services.invite(app, username, role, request.user)
    except services.MembershipError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(
            request,
            f"Invitation to {username} as {role} saved: if a user has that name, it shows on their "
            "apps page, and they become a member when they accept it.",
        )
    return _members_page(app.pk)


@login_required
@require_POST
def invitation_cancel(
    request: AuthenticatedHttpRequest, app_id: int, invitation_id: int
) -> HttpResponse:
    app = app_or_404(request.user, app_id)
    selectors.require_app_admin(request.user, app)
    with found():
        invitation = selectors.app_invitations(app).get(pk=invitation_id)
    services.drop_invitation(invitation)
    messages.success(request, f"The invitation to {invitation.username} is withdrawn.")
    return _members_page(app.pk)


@login_required
@require_POST
def member_role(request: AuthenticatedHttpRequest, app_id: int, membership_id: int) -> HttpResponse:
    app = app_or_404(request.user, app_id)
    selectors.require_app_admin(request.user, app)
    with found():
        membership = selectors.membership_of_app(app, membership_id)
    form = RoleForm(request.POST)
    if not form.is_valid():
        messages.error(request, error_text(form))
        return _members_page(app.pk)
    try:
        services.change_role(membership, form.cleaned_data["role"])
    except services.MembershipError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"{membership.user.get_username()} is now {membership.role}.")
    return _members_page(app.pk)


@login_required
@require_POST
def member_remove(
    request: AuthenticatedHttpRequest, app_id: int, membership_id: int
) -> HttpResponse:
    app = app_or_404(request.user, app_id)
    selectors.require_app_admin(request.user, app)
    with found():
        membership = selectors.membership_of_app(app, membership_id)
    name = membership.user.get_username()
    if request.POST.get("confirm") != "1":
        return confirm_page(
            request,
            title=f"Remove {name} from {app.display_name}?",
            message=f"{name} can no longer see {app.display_name}; items assigned to them stay "
            "assigned. An admin can invite them again.",
            fields={},
            confirm_label="Remove the member",
            cancel_url=reverse("site:app_settings", args=[app.pk]),
        )
    try:
        services.remove_member(membership)
    except services.MembershipError as exc:
        messages.error(request, str(exc))
        return _members_page(app.pk)
    messages.success(request, f"{name} is no longer a member of {app.display_name}.")
    if membership.user_id == request.user.pk and not request.user.is_superuser:
        return redirect("core:app_list")  # they left: the app is gone for them
    return _members_page(app.pk)


def login_locked_out(
    request: HttpRequest, response: HttpResponse | None, credentials: dict[str, Any] | None
) -> HttpResponse:
    """django-axes's answer to a login while the account or the client's address is locked out
    (`AXES_LOCKOUT_CALLABLE`): the login page saying so, 429 with Retry-After. Every attempt
    while locked out starts the lockout again, so the wait is the whole lockout."""
    seconds = settings.MEMDASH_AUTH_LOCKOUT_SECONDS
    page = render(
        request,
        "registration/login.html",
        {"form": AuthenticationForm(request), "locked_out_ms": seconds * 1000},
        status=429,
    )
    page["Retry-After"] = str(seconds)
    return page


@login_required
@require_POST
def tracker_settings(request: AuthenticatedHttpRequest, app_id: int) -> HttpResponse:
    app = app_or_404(request.user, app_id)
    selectors.require_app_admin(request.user, app)
    form = TrackerForm(request.POST)
    if form.is_valid():
        set_tracker_template(app, form.cleaned_data["new_issue_url"])
        messages.success(request, "Issue tracker saved: clusters and leaks link to it.")
    else:
        messages.error(request, error_text(form))
    return redirect(reverse("site:app_settings", args=[app.pk]) + "#tracker")
