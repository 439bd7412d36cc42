"""Shared pieces of the JSON API: one error shape for every failure, query parameters, and how
a build is referred to."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, overload

from django.http import QueryDict
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, inline_serializer
from rest_framework import serializers
from rest_framework.exceptions import APIException, NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.urls import replace_query_param
from rest_framework.views import exception_handler as drf_exception_handler

from memdash.core.logic.flags import read_flag

if TYPE_CHECKING:
    from memdash.core.models import Build


class Text(serializers.CharField):
    """A JSON string, and only that (Django REST framework's CharField takes numbers as text)."""

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        if self.max_length is not None and len(data) > self.max_length:  # blanks count too
            self.fail("max_length", max_length=self.max_length)
        return super().to_internal_value(data)


class WholeNumber(serializers.IntegerField):
    """A JSON integer, and only that: IntegerField takes `"5"` too; `5.0` is an integer to JSON
    Schema (a number whose fraction is zero), so it is taken as 5; true is not 1."""

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, float) and data.is_integer():
            data = int(data)
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


class Number(serializers.FloatField):
    """A JSON number, and only that (FloatField takes `"5"` too; true is not 1)."""

    def to_internal_value(self, data: Any) -> float:
        if isinstance(data, bool) or not isinstance(data, int | float):
            self.fail("invalid")
        return super().to_internal_value(data)


class Flag(serializers.BooleanField):
    """A JSON true or false, and only that (BooleanField takes `"yes"` and `1` too)."""

    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid", input=data)
        return data


class MissingReference(NotFound):
    """A well-formed value that names nothing there (a member of the app, one of its builds, a
    generation of the snapshot): a 404, as any id not found is, with the path of the value."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(message)
        self.path = path


class Contradicted(APIException):
    """A well-formed value that the data contradicts (a fix in a build that still has the item):
    409, with the path of the value."""

    status_code = 409
    default_code = "conflict"

    def __init__(self, path: str, message: str) -> None:
        super().__init__(message)
        self.path = path


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's handler, with every error answered as {"error": message, ...}."""
    response = drf_exception_handler(exc, context)
    if response is not None and isinstance(response.data, dict) and "detail" in response.data:
        response.data = {"error": str(response.data["detail"])}
        if isinstance(exc, MissingReference | Contradicted):
            response.data["path"] = exc.path
    elif response is not None and "error" not in (response.data or {}):
        response.data = {"error": "invalid request", "fields": response.data}
    return response


def parse_flag(params: QueryDict, name: str, default: bool = False) -> bool:
    """The yes/no parameter `name` (`default` when absent, no when empty); 400 naming it for
    any other word."""
    value = read_flag(params.get(name), default)
    if value is None:
        raise ValidationError({name: "must be 1 or 0 (true/false)"})
    return value


def parse_int(params: QueryDict, name: str, default: int, low: int, high: int) -> int:
    """The integer parameter `name` (`default` when absent); 400 naming it when it is not a
    whole number from `low` to `high`."""
    value = params.get(name, "")
    if value == "":
        return default
    # int() would also take " 5", "5_0" and other scripts' digits, which no schema declares
    if not WHOLE_NUMBER.fullmatch(value):
        raise ValidationError({name: "must be an integer"})
    number = int(value)
    if not low <= number <= high:
        raise ValidationError({name: f"must be between {low} and {high}"})
    return number


WHOLE_NUMBER = re.compile(r"-?[0-9]{1,19}")
DECIMAL = re.compile(r"-?[0-9]{1,18}(?:\.[0-9]{1,9})?")


def parse_decimal(params: QueryDict, name: str, low: float, high: float) -> float | None:
    """The decimal parameter `name` (ASCII digits, an optional sign and fraction: `12`,
    `-0.5`; None when absent or empty); 400 naming it for anything else or outside low..high."""
    value = params.get(name, "")
    if value == "":
        return None
    if DECIMAL.fullmatch(value) is None:
        raise ValidationError({name: "must be a decimal number such as 1250 or 1250.5"})
    number = float(value)
    if not low <= number <= high:
        raise ValidationError({name: f"must be between {low:g} and {high:g}"})
    return number


MAX_OFFSET = 2**31


def page_window(params: QueryDict, default_limit: int, max_limit: int) -> tuple[int, int]:
    """(offset, limit) of a paged list: `offset` (default 0) and `limit` (1 to `max_limit`)."""
    offset = parse_int(params, "offset", 0, 0, MAX_OFFSET)
    return offset, parse_int(params, "limit", default_limit, 1, max_limit)


def page_fields(request: Request, offset: int, limit: int, count: int) -> dict[str, Any]:
    """What every paged answer says besides its rows: how many there are in all, the window
    answered, and `next`, the URL of the following page (null on the last)."""
    following = offset + limit
    return {
        "count": count,
        "offset": offset,
        "limit": limit,
        "next": replace_query_param(request.build_absolute_uri(), "offset", following)
        if following < count
        else None,
    }


@overload
def build_ref(build: Build) -> dict[str, Any]: ...
@overload
def build_ref(build: Build | None) -> dict[str, Any] | None: ...
def build_ref(build: Build | None) -> dict[str, Any] | None:
    """A build as the JSON of every domain names it: {id, version, number}; null for none."""
    if build is None:
        return None
    return {"id": build.pk, "version": build.version, "number": build.number}


# What an endpoint answers while a task builds its result (a call tree too large to build in the
# request): 202 with the task's state and how far it is, Retry-After saying when to ask again;
# 500 with `error` when the task failed.
PENDING_RESPONSES = {
    202: OpenApiResponse(
        inline_serializer(
            "Pending",
            {
                "state": serializers.ChoiceField(choices=["queued", "running"]),
                "progress": serializers.FloatField(min_value=0, max_value=1),
                "retry_after": serializers.IntegerField(help_text="seconds"),
                "url": serializers.CharField(
                    help_text="the status URL (also Location): this request's own, which "
                    "answers the result once it is built"
                ),
            },
        ),
        description="The result is being built by a task: ask again after Retry-After seconds.",
    ),
    500: OpenApiResponse(OpenApiTypes.OBJECT, description="the task building it failed"),
}
