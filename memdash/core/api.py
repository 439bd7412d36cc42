"""Shared pieces of the JSON API: one error shape for every failure."""

from __future__ import annotations

from rest_framework.views import exception_handler as drf_exception_handler


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
