"""Reads about apps and who may see them. Every page and API view of an app goes through here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet

from memdash.core.logic.numbers import whole_number
from memdash.core.models import App, Build, Invitation, Membership

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser, User


def apps_for_user(user: User | AnonymousUser) -> QuerySet[App]:
    """A superuser sees every app, anyone else only the apps he is a member of."""
    if not user.is_authenticated:
        return App.objects.none()
    if user.is_superuser:
        return App.objects.all()
    return App.objects.filter(membership__user=user)


def app_for_user(user: User | AnonymousUser, app_id: int | str) -> App:
    """The app, if the user may see it; else App.DoesNotExist, as for an app that does not
    exist (views answer 404 for both: `core.web.http.app_or_404`)."""
    try:
        return apps_for_user(user).get(pk=int(app_id))
    except (App.DoesNotExist, ValueError, TypeError):
        raise App.DoesNotExist("No such app") from None


def apps_for_contributor(user: User | AnonymousUser) -> QuerySet[App]:
    """The apps whose data the user may change (triage, upload): as a member or an admin (a
    superuser: every app)."""
    if not user.is_authenticated or user.is_superuser:
        return apps_for_user(user)
    return App.objects.filter(membership__user=user, membership__role__in=Membership.CONTRIBUTORS)


def is_app_contributor(user: User | AnonymousUser, app: App) -> bool:
    """Whether the user may triage and upload in the app (a member or an admin; not a viewer)."""
    return apps_for_contributor(user).filter(pk=app.pk).exists()


def require_app_contributor(user: User | AnonymousUser, app: App) -> None:
    """Triage and uploads: a viewer only reads (403)."""
    if not is_app_contributor(user, app):
        raise PermissionDenied("Viewers only read: an admin of the app can make you a member.")


def is_app_admin(user: User, app: App) -> bool:
    if user.is_superuser:
        return True
    return Membership.objects.filter(user=user, app=app, role=Membership.ADMIN).exists()


def require_app_admin(user: User, app: App) -> None:
    """Settings pages: only the app's admins change them (403 for other members)."""
    if not is_app_admin(user, app):
        raise PermissionDenied("Only the app's admins can change its settings.")


def builds_in_release_order(app: App) -> list[Build]:
    return sorted(app.builds.all(), key=lambda b: b.release_key)


def find_build(app: App, version: str, number: str | None = None) -> Build | None:
    """A build by version and number; number may be left out when the version is unambiguous."""
    builds = Build.objects.filter(app=app, version=version)
    if number is not None:
        builds = builds.filter(number=number)
    found = list(builds[:2])
    return found[0] if len(found) == 1 else None


def app_members(app: App) -> QuerySet[User]:
    return get_user_model().objects.filter(membership__app=app).order_by("username")


def app_memberships(app: App) -> QuerySet[Membership]:
    return app.membership_set.select_related("user").order_by("user__username")


def app_invitations(app: App) -> QuerySet[Invitation]:
    """The app's pending invitations, for its admins."""
    return app.invitations.select_related("invited_by").order_by("username")


def invitations_for_user(user: User) -> QuerySet[Invitation]:
    """The invitations addressed to the user's name, newest first."""
    return (
        Invitation.objects.filter(username=user.get_username())
        .select_related("app", "invited_by")
        .order_by("-created_at")
    )


def membership_of_app(app: App, membership_id: int) -> Membership:
    """A membership of the app (Membership.DoesNotExist for another app's)."""
    return app.membership_set.select_related("user").get(pk=membership_id)


def resolve_app(value: str, platform: str | None = None) -> App | None:
    """An app by number or bundle id (with platform when the bundle id names several)."""
    number = whole_number(value)
    apps = (
        App.objects.filter(pk=number) if number is not None else App.objects.filter(bundle_id=value)
    )
    if platform:
        apps = apps.filter(platform=platform)
    found = list(apps[:2])
    return found[0] if len(found) == 1 else None
