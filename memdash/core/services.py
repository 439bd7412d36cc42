"""Writes of the core domain: apps, builds, devices, keys and tokens."""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.utils import timezone

from memdash.core.models import ApiToken, App, Build, Device, IngestKey, Membership


def get_or_create_app(bundle_id: str, platform: str, name: str = "") -> App:
    app, created = App.objects.get_or_create(
        bundle_id=bundle_id, platform=platform, defaults={"name": name}
    )
    if not created and name and not app.name:
        App.objects.filter(pk=app.pk).update(name=name)
        app.name = name
    return app


def _get_or_create_race_safe(model, lookup: dict, defaults: dict):
    """get_or_create that survives two workers creating the same row at once."""
    try:
        with transaction.atomic():
            return model.objects.get_or_create(**lookup, defaults=defaults)[0]
    except IntegrityError:
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
    changes = {}
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


def create_api_token(user, name: str = "") -> tuple[ApiToken, str]:
    secret = ApiToken.new_secret()
    token = ApiToken(user=user, name=name)
    token.set_secret(secret)
    token.save()
    return token, secret


def revoke_api_token(token: ApiToken) -> None:
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])


def add_member(app: App, user, role: str = Membership.VIEWER) -> Membership:
    membership, _ = Membership.objects.update_or_create(app=app, user=user, defaults={"role": role})
    return membership


def touch_last_used(key) -> None:
    """Recorded at most once a minute, so a busy key does not write on every request."""
    now = timezone.now()
    if key.last_used_at is None or (now - key.last_used_at).total_seconds() > 60:
        type(key).objects.filter(pk=key.pk).update(last_used_at=now)
