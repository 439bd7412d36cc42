"""Authentication of API callers: personal tokens for reading, ingest keys for uploading.

Both come from the Authorization header only (never a query parameter, which would end up in
access logs), and both are looked up by their SHA-256 hash.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.http import HttpRequest
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from memdash.core.models import ApiToken, IngestKey
from memdash.core.services import touch_last_used

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


class ApiTokenAuthentication(authentication.BaseAuthentication):
    keyword = "Token"

    def authenticate(self, request: Request) -> tuple[User, ApiToken] | None:
        secret = header_secret(request, self.keyword)
        if secret is None:
            return None
        token = ApiToken.objects.select_related("user").find(secret)
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
    key = IngestKey.objects.select_related("app").find(secret)
    if key is not None:
        touch_last_used(key)
    return key
