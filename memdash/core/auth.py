"""Authentication of API callers: personal tokens for reading, ingest keys for uploading.

Both come from the Authorization header only (never a query parameter, which would end up in
access logs), and both are looked up by their SHA-256 hash. A secret that matches no token or
key counts as a failure of the client's address; past the limit that address is answered 429
for every token and key, the right ones too, until its lockout ends (`core.throttle`). A revoked
secret is refused without counting: it is no guess (an old app version keeps sending its key).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib.auth.models import AnonymousUser
from django.http import HttpRequest
from rest_framework import authentication, exceptions, permissions
from rest_framework.request import Request

from memdash.core import throttle
from memdash.core.models import ApiToken, IngestKey, KeyQuerySet
from memdash.core.writes.apps import touch_last_used

if TYPE_CHECKING:
    from django.contrib.auth.models import User


class AuthenticatedHttpRequest(HttpRequest):
    """For type checking only: the request of a view behind `login_required`, whose user is
    signed in (django-stubs' way to say so; Django never makes one of these)."""

    user: User


def header_secret(request: HttpRequest, scheme: str) -> str | None:
    """The secret after `scheme` in the Authorization header, or None when another scheme."""
    header: str = request.META.get("HTTP_AUTHORIZATION", "")
    parts = header.split()
    if len(parts) == 2 and parts[0].lower() == scheme.lower():
        return parts[1]
    return None


def _active_with_secret[K: (ApiToken, IngestKey)](
    request: HttpRequest, keys: KeyQuerySet[K], secret: str
) -> K | None:
    """The active key or token whose secret this is, or None. A client address locked out is
    refused (429) before the lookup; a secret that matches nothing counts against it."""
    wait = throttle.auth_lock_wait(request)
    if wait is not None:
        raise exceptions.Throttled(
            wait, "Too many failed authentications from this address: tokens and keys are refused."
        )
    found = keys.with_secret(secret)
    if found is None:
        throttle.note_auth_failure(request)
        return None
    return found if found.is_active else None


class ApiTokenAuthentication(authentication.BaseAuthentication):
    keyword = "Token"

    def authenticate(self, request: Request) -> tuple[User, ApiToken] | None:
        secret = header_secret(request, self.keyword)
        if secret is None:
            return None
        token = _active_with_secret(request, ApiToken.objects.select_related("user"), secret)
        if token is None or not token.user.is_active:
            raise exceptions.AuthenticationFailed("Invalid or revoked API token.")
        touch_last_used(token)
        return token.user, token

    def authenticate_header(self, request: Request) -> str:
        return self.keyword


def ingest_key_from_request(request: HttpRequest) -> IngestKey | None:
    """The active ingest key of a `Authorization: Bearer <key>` header, or None."""
    secret = header_secret(request, "Bearer")
    if not secret:
        return None
    key = _active_with_secret(request, IngestKey.objects.select_related("app"), secret)
    if key is not None:
        touch_last_used(key)
    return key


class IngestKeyAuthentication(authentication.BaseAuthentication):
    """`Authorization: Bearer <ingest key>` for the few reads a key may make (the status of its
    own uploads): the request is then no user's, and `request.auth` is the key."""

    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[AnonymousUser, IngestKey] | None:
        if header_secret(request, self.keyword) is None:
            return None
        key = ingest_key_from_request(request)
        if key is None:
            raise exceptions.AuthenticationFailed("Invalid or revoked ingest key.")
        return AnonymousUser(), key

    def authenticate_header(self, request: Request) -> str:
        return self.keyword


class SignedInOrIngestKey(permissions.BasePermission):
    """A signed-in user (session or API token), or an ingest key (`IngestKeyAuthentication`)."""

    def has_permission(self, request: Request, view: Any) -> bool:
        return bool(request.user and request.user.is_authenticated) or isinstance(
            request.auth, IngestKey
        )
