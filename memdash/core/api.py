"""Shared pieces of the JSON API: one error shape for every failure, query parameters, and how
a build is referred to."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rest_framework.views import exception_handler as drf_exception_handler

if TYPE_CHECKING:
    from memdash.core.models import Build


def exception_handler(exc, context):
    """DRF's handler, with every error answered as {"error": message, ...}."""
    response = drf_exception_handler(exc, context)
    if response is not None and isinstance(response.data, dict) and "detail" in response.data:
        response.data = {"error": str(response.data["detail"])}
    elif response is not None and "error" not in (response.data or {}):
        response.data = {"error": "invalid request", "fields": response.data}
    return response


def parse_bool(value: str | None, default: bool = False) -> bool:
    if value is None or value == "":
        return default
    return value.lower() in {"1", "true", "yes", "on"}


def build_ref(build: Build | None) -> dict | None:
    """A build as the JSON of every domain names it: {id, version, number}; null for none."""
    if build is None:
        return None
    return {"id": build.pk, "version": build.version, "number": build.number}
