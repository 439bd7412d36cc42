"""Who and what memdash is about: apps, their builds and devices, members, keys and tokens."""

from __future__ import annotations

import hashlib
import re
import secrets

from django.conf import settings
from django.db import models
from django.utils import timezone

from memdash.core.links import page_url

PLATFORMS = ["ios", "android", "macos", "linux", "other"]
# How the pages write each platform (the API, the uploads and the database keep the names above).
PLATFORM_NAMES = {
    "ios": "iOS",
    "android": "Android",
    "macos": "macOS",
    "linux": "Linux",
    "other": "other",
}


def hash_secret(secret: str) -> str:
    """Keys and tokens are random 256-bit strings, so a plain SHA-256 is enough to store them."""
    return hashlib.sha256(secret.encode()).hexdigest()


class App(models.Model):
    bundle_id = models.CharField(max_length=255, help_text="bundle id or package name")
    platform = models.CharField(max_length=16, choices=[(p, p) for p in PLATFORMS])
    name = models.CharField(max_length=255, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    members = models.ManyToManyField(
        settings.AUTH_USER_MODEL, through="Membership", related_name="memdash_apps"
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["bundle_id", "platform"], name="app_bundle_platform")
        ]
        ordering = ["bundle_id", "platform"]

    def __str__(self) -> str:
        return self.name or self.bundle_id

    @property
    def display_name(self) -> str:
        return self.name or self.bundle_id

    @property
    def platform_name(self) -> str:
        """ "iOS", "Android": the platform as the pages write it."""
        return PLATFORM_NAMES.get(self.platform, self.platform)

    def get_absolute_url(self) -> str:
        return page_url("app", self.pk)


class Membership(models.Model):
    """A user's role in an app: a viewer reads; a member also triages and uploads; an admin also
    manages the app's settings, ingest keys and members. An app keeps at least one admin."""

    VIEWER, MEMBER, ADMIN = "viewer", "member", "admin"
    ROLES = [(VIEWER, "viewer"), (MEMBER, "member"), (ADMIN, "admin")]
    CONTRIBUTORS = (MEMBER, ADMIN)  # who may change an app's data: triage, upload
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    app = models.ForeignKey(App, on_delete=models.CASCADE)
    role = models.CharField(max_length=16, choices=ROLES)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "app"], name="membership_user_app")]


class Invitation(models.Model):
    """An admin's invitation of a username to an app, with a role. The user it names (if there
    is one) sees it on the apps page and becomes a member by accepting it; the admin sees the
    same pending invitation whether or not such a user exists."""

    app = models.ForeignKey(App, on_delete=models.CASCADE, related_name="invitations")
    username = models.CharField(max_length=150)
    role = models.CharField(max_length=16, choices=Membership.ROLES)
    invited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["app", "username"], name="invitation_app_username")
        ]


_VERSION_PART = re.compile(r"(\d+)|(\D+)")


# 'x8.10' -> ((1, 0, 'x'), (0, 8, ''), (1, 0, '.'), (0, 10, ''))
NaturalKey = tuple[tuple[int, int, str], ...]


def natural_key(text: str) -> NaturalKey:
    """'8.0.10' sorts after '8.0.9': digits compare as numbers, the rest as text."""
    return tuple(
        (0, int(num), "") if num else (1, 0, other) for num, other in _VERSION_PART.findall(text)
    )


class Build(models.Model):
    app = models.ForeignKey(App, on_delete=models.CASCADE, related_name="builds")
    version = models.CharField(max_length=64)
    number = models.CharField(max_length=64, blank=True, default="")
    commit = models.CharField(max_length=64, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["app", "version", "number"], name="build_identity")
        ]

    def __str__(self) -> str:
        return f"{self.version} ({self.number})" if self.number else self.version

    @property
    def release_key(self) -> tuple[NaturalKey, NaturalKey]:
        return natural_key(self.version), natural_key(self.number)

    def get_absolute_url(self) -> str:
        return page_url("build", self.app_id, self.pk)


class Device(models.Model):
    app = models.ForeignKey(App, on_delete=models.CASCADE, related_name="devices")
    device_key = models.CharField(max_length=255)
    model = models.CharField(max_length=128, blank=True, default="")
    os = models.CharField(max_length=128, blank=True, default="")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["app", "device_key"], name="device_identity")
        ]

    def __str__(self) -> str:
        return self.model or self.device_key


class KeyQuerySet[K: SecretKeyBase](models.QuerySet[K]):
    def active(self) -> KeyQuerySet[K]:
        return self.filter(revoked_at__isnull=True)

    def find(self, secret: str) -> K | None:
        return self.active().filter(hashed=hash_secret(secret)).first()

    def with_secret(self, secret: str) -> K | None:
        """The key or token of this secret, revoked or not."""
        return self.filter(hashed=hash_secret(secret)).first()


class SecretKeyBase(models.Model):
    """A secret shown once; only its hash and a short prefix (to tell keys apart) are stored."""

    PREFIX = ""
    prefix = models.CharField(max_length=16)
    hashed = models.CharField(max_length=64, unique=True)
    name = models.CharField(max_length=100, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = KeyQuerySet.as_manager()

    class Meta:
        abstract = True

    @classmethod
    def new_secret(cls) -> str:
        return cls.PREFIX + secrets.token_urlsafe(32)

    def set_secret(self, secret: str) -> None:
        self.prefix = secret[: len(self.PREFIX) + 6]
        self.hashed = hash_secret(secret)

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


class IngestKey(SecretKeyBase):
    PREFIX = "mdk_"
    app = models.ForeignKey(App, on_delete=models.CASCADE, related_name="ingest_keys")
    # Uploads refused beyond the key's quota a minute (`core.throttle`): counted here, never
    # stored as uploads (a key that floods would otherwise make a row of each refusal).
    over_quota = models.PositiveBigIntegerField(default=0)
    last_over_quota_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.app})"


class ApiToken(SecretKeyBase):
    PREFIX = "mdt_"
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.user})"
