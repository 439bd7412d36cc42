"""Writes of the core domain: apps, builds, devices, keys, tokens and members."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db import models, transaction
from django.utils import timezone

from memdash.core.models import ApiToken, App, Build, Device, IngestKey, Invitation, Membership
from memdash.core.writes import transactions

if TYPE_CHECKING:
    from django.contrib.auth.models import User


def get_or_create_app(bundle_id: str, platform: str, name: str = "") -> App:
    app, created = App.objects.get_or_create(
        bundle_id=bundle_id, platform=platform, defaults={"name": name}
    )
    if not created and name and not app.name:
        App.objects.filter(pk=app.pk).update(name=name)
        app.name = name
    return app


def _get_or_create_race_safe[M: (Build, Device)](
    model: type[M], lookup: dict[str, Any], defaults: dict[str, Any]
) -> M:
    """get_or_create that survives two workers creating the same row at once, in one SELECT
    when the row exists (the common case: a build has many uploads). A missing row is inserted
    with ON CONFLICT DO NOTHING, which cannot fail on the row another worker just inserted, so
    no savepoint is needed to keep the caller's transaction (an upload's) usable."""
    try:
        return model.objects.get(**lookup)
    except model.DoesNotExist:
        model.objects.bulk_create([model(**lookup, **defaults)], ignore_conflicts=True)
        return model.objects.get(**lookup)


def get_or_create_build(app: App, version: str, number: str = "", commit: str = "") -> Build:
    build = _get_or_create_race_safe(
        Build, {"app": app, "version": version, "number": number or ""}, {"commit": commit or ""}
    )
    if commit and not build.commit:
        Build.objects.filter(pk=build.pk).update(commit=commit)
        build.commit = commit
    return build


def get_or_create_device(app: App, device_key: str, model: str = "", os: str = "") -> Device:
    device = _get_or_create_race_safe(
        Device, {"app": app, "device_key": device_key}, {"model": model or "", "os": os or ""}
    )
    changes: dict[str, str] = {}
    if model and device.model != model:
        changes["model"] = model
    if os and device.os != os:
        changes["os"] = os
    if changes:
        Device.objects.filter(pk=device.pk).update(**changes)
        for field, value in changes.items():
            setattr(device, field, value)
    return device


def create_ingest_key(app: App, name: str = "") -> tuple[IngestKey, str]:
    """Returns the key and its secret; the secret is not stored and cannot be shown again."""
    secret = IngestKey.new_secret()
    key = IngestKey(app=app, name=name)
    key.set_secret(secret)
    key.save()
    return key, secret


def revoke_ingest_key(key: IngestKey) -> None:
    if key.revoked_at is None:
        key.revoked_at = timezone.now()
        key.save(update_fields=["revoked_at"])


def create_api_token(user: User, name: str = "") -> tuple[ApiToken, str]:
    secret = ApiToken.new_secret()
    token = ApiToken(user=user, name=name)
    token.set_secret(secret)
    token.save()
    return token, secret


def revoke_api_token(token: ApiToken) -> None:
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])


def add_member(app: App, user: User, role: str = Membership.MEMBER) -> Membership:
    membership, _ = Membership.objects.update_or_create(app=app, user=user, defaults={"role": role})
    return membership


class MembershipError(ValueError):
    """A change of members that is not allowed (the last admin leaving); its text says why."""


def _check_an_admin_stays(membership: Membership) -> None:
    """Inside a transaction: refuse when `membership` is its app's only admin. The app's admin
    rows are locked, so two admins demoting each other at once cannot both succeed."""
    admins = list(
        Membership.objects.select_for_update()
        .filter(app_id=membership.app_id, role=Membership.ADMIN)
        .values_list("pk", flat=True)
    )
    if admins == [membership.pk]:
        raise MembershipError("an app keeps at least one admin: make another member admin first")


def change_role(membership: Membership, role: str) -> None:
    """Give a member another role; the last admin keeps theirs (MembershipError)."""
    with transaction.atomic():
        current = Membership.objects.select_for_update().get(pk=membership.pk)
        if current.role == Membership.ADMIN and role != Membership.ADMIN:
            _check_an_admin_stays(current)
        Membership.objects.filter(pk=current.pk).update(role=role)
    membership.role = role


def remove_member(membership: Membership) -> None:
    """Take a user out of an app; the last admin stays (MembershipError). Their triage
    assignments stay, as history; they can no longer see the app."""
    with transaction.atomic():
        current = Membership.objects.select_for_update().get(pk=membership.pk)
        if current.role == Membership.ADMIN:
            _check_an_admin_stays(current)
        current.delete()


def invite(app: App, username: str, role: str, invited_by: User) -> Invitation:
    """Invite a username to an app (again: the role of the pending invitation changes). Done
    alike whether or not a user has that name, so an admin learns nothing of other users. A
    member of the app already (whom the admin sees in the members table) is refused."""
    if Membership.objects.filter(app=app, user__username=username).exists():
        raise MembershipError(f"{username} is a member already: change their role in the table")
    invitation, _ = Invitation.objects.update_or_create(
        app=app, username=username, defaults={"role": role, "invited_by": invited_by}
    )
    return invitation


def accept_invitation(invitation: Invitation, user: User) -> Membership:
    """The invited user joins the app with the invitation's role (a member already keeps the
    higher of the two roles: accepting never takes a right away)."""
    order = [role for role, _ in Membership.ROLES]
    with transaction.atomic():
        current = Membership.objects.filter(app_id=invitation.app_id, user=user).first()
        role = invitation.role
        if current is not None and order.index(current.role) > order.index(role):
            role = current.role
        membership = add_member(invitation.app, user, role)
        invitation.delete()
    return membership


def drop_invitation(invitation: Invitation) -> None:
    """Declined by the user, or withdrawn by an admin."""
    invitation.delete()


def count_over_quota(key: IngestKey) -> None:
    """An upload the key's quota refused: counted on the key (one UPDATE, no row of its own)."""
    IngestKey.objects.filter(pk=key.pk).update(
        over_quota=models.F("over_quota") + 1, last_over_quota_at=timezone.now()
    )


def touch_last_used(key: IngestKey | ApiToken) -> None:
    """Recorded at most once a minute, so a busy key does not write on every request."""
    now = timezone.now()
    if key.last_used_at is None or (now - key.last_used_at).total_seconds() > 60:
        used = type(key).objects.filter(pk=key.pk)
        transactions.retried_on_deadlock(lambda: used.update(last_used_at=now), one_statement=True)


# --- deletion ---------------------------------------------------------------------------------
# Core cannot know the rows the other apps keep for an app or a build, and some of those sit in
# large tables without database constraints (snapshot rows, FOOM sessions) that no cascade would
# reach. So deleting goes through the ORM and its `pre_delete` signal: each app that owns such
# rows connects a receiver for App and Build in its AppConfig.ready() and removes them in bulk,
# by app or build id, before the ORM deletes the rest. A plain `app.delete()` (the admin, a
# shell) is therefore as clean as these services.


def delete_app(app: App) -> None:
    """Delete an app and everything stored for it, in one transaction."""
    with transaction.atomic():
        app.delete()


def delete_build(build: Build) -> None:
    """Delete a build and everything stored for it (its snapshots, runs, reports), in one
    transaction. The app's frames, stack nodes and categories stay: other builds share them."""
    with transaction.atomic():
        build.delete()


def cascaded_from(origin: object, *owners: type[models.Model]) -> bool:
    """Whether a deletion started at a row (or a queryset) of one of `owners`: Django's
    `origin` of a pre_delete signal. A receiver for a build skips the builds of an app being
    deleted, since the receiver for the app already removed their rows in one statement."""
    if isinstance(origin, models.QuerySet):
        return issubclass(origin.model, owners)
    return isinstance(origin, owners)
