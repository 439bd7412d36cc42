"""OpenAPI: how memdash's API documents itself (drf-spectacular's `AutoSchema`, extended).

One place says what every operation shares, so that no view repeats it:

- the error answers: every error is `{"error": message}` (`core.web.api.exception_handler`; a 400
  of parameters or fields adds `fields`, a refused upload or debug file adds `path`). An
  operation is documented with each error status it can answer: 400 when it reads query
  parameters (every parameter is checked, and the middleware refuses a NUL in any) or a body;
  404 when its path names something (an id that is not there or not the caller's, and a path that
  matches no route under /api/, which `core.web.http.not_found` answers); 401 and 429 when it
  needs credentials (none or unknown ones; an address locked out after failures,
  `core.throttle`); 403 for a change made through a session (CSRF). Other statuses (409, 411,
  413, an upload's 403) are declared by the view's own `extend_schema`;
- query parameters: an empty value (`?limit=`) reads as an absent one (`allowEmptyValue`); a
  yes/no parameter takes the words of `core.logic.flags.read_flag` in any case (`FLAG`); ids in a
  path are positive 64-bit integers;
- response bodies: the JSON Schema helpers below (`obj`, `array`, …) and the shapes every domain
  shares (`BUILD_REF`, `PAGE_FIELDS`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema as BaseAutoSchema
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from rest_framework.serializers import Serializer

from memdash.core.logic.flags import NO, YES
from memdash.core.logic.numbers import MAX_INT64
from memdash.core.web.api import MAX_OFFSET

Schema = dict[str, Any]

# --- JSON Schema of answers -------------------------------------------------------------------
INT: Schema = {"type": "integer"}
NUMBER: Schema = {"type": "number"}
STR: Schema = {"type": "string"}
BOOL: Schema = {"type": "boolean"}
OBJECT: Schema = {"type": "object"}
DATETIME: Schema = {"type": "string", "format": "date-time"}


def nullable(schema: Schema) -> Schema:
    return {**schema, "nullable": True}


def array(items: Schema | None = None) -> Schema:
    return {"type": "array", "items": items if items is not None else {}}


def obj(properties: Mapping[str, Schema], optional: Mapping[str, Schema] | None = None) -> Schema:
    """An object with these keys, each always there, and the `optional` ones when they apply."""
    schema: Schema = {
        "type": "object",
        "properties": {**properties, **(optional or {})},
        "required": list(properties),
    }
    return schema


BUILD_REF = obj({"id": INT, "version": STR, "number": STR})  # core.api.build_ref
PAGE_FIELDS: dict[str, Schema] = {  # core.api.page_fields
    "count": INT,
    "offset": INT,
    "limit": INT,
    "next": nullable({"type": "string", "format": "uri"}),
}

ERROR = obj(
    {"error": STR},
    optional={
        "fields": {
            "type": "object",
            "description": "each parameter or field in error, with what is wrong with it",
        },
        "path": {
            "type": "string",
            "description": "where a refused upload breaks its format: a JSON path or `line N`",
        },
    },
)
ERROR_TEXT = {
    400: "The request cannot be read: `fields` names each parameter or field in error.",
    401: "No credentials, or a token or key that is unknown or revoked.",
    403: "Not allowed: a viewer's change, a change without its CSRF token, another app's key.",
    404: "No such object, or one of an app the caller is no member of.",
    409: "The allocation rows it needs were pruned by retention.",
    411: "A body without a Content-Length (chunked).",
    413: "The body is larger than the limit.",
    429: "Too many failed authentications from this address (Retry-After says how long).",
}


def error(status: int, description: str = "", body: Schema | None = None) -> OpenApiResponse:
    """The documented error answer of `status`: the error body, and what it means."""
    return OpenApiResponse(body or ERROR, description=description or ERROR_TEXT[status])


def errors(*statuses: int) -> dict[int, OpenApiResponse]:
    return {status: error(status) for status in statuses}


# --- query parameters -------------------------------------------------------------------------
def _words(words: frozenset[str]) -> list[str]:
    return [w for w in sorted(words) if w]


# core.flags.read_flag: the words of yes and no in any case, blanks around; an empty value is no.
FLAG: Schema = {
    "type": "string",
    "pattern": r"^\s*(?:"
    + "|".join(
        "".join(f"[{c.upper()}{c}]" if c.isalpha() else c for c in word)
        for word in _words(YES) + _words(NO)
    )  # fmt: skip
    + r")?\s*$",
    "description": f"yes ({', '.join(_words(YES))}) or no ({', '.join(_words(NO))}), in any case",
}


def number_pattern(maximum: int) -> str:
    """A regex (no anchors) of the whole numbers from 0 to `maximum` in ASCII digits, leading
    zeros allowed: what `core.logic.numbers.whole_number(text, maximum)` reads."""
    digits = str(maximum)
    shorter = [r"[0-9]" if n == 1 else rf"[1-9][0-9]{{{n - 1}}}" for n in range(1, len(digits))]
    same = []
    for i, digit in enumerate(digits):
        low = 1 if i == 0 and len(digits) > 1 else 0
        if int(digit) > low:
            rest = len(digits) - i - 1
            tail = f"[0-9]{{{rest}}}" if rest else ""
            same.append(f"{digits[:i]}[{low}-{int(digit) - 1}]{tail}")
    return "0*(?:" + "|".join([*shorter, *same, digits]) + ")"


def int_parameter(name: str, low: int, high: int, description: str = "") -> OpenApiParameter:
    """An integer query parameter from `low` to `high` (`core.web.api.parse_int`)."""
    schema = {"type": "integer", "minimum": low, "maximum": high}
    return OpenApiParameter(name, schema, description=description)


def flag_parameter(name: str, description: str = "") -> OpenApiParameter:
    """A yes/no query parameter (`core.web.api.parse_flag`)."""
    return OpenApiParameter(name, FLAG, description=description)


def page_parameters(default: int, most: int, what: str = "rows") -> list[OpenApiParameter]:
    """`offset` and `limit` of a paged list (`core.web.api.page_window`)."""
    return [
        int_parameter("offset", 0, MAX_OFFSET, f"{what} to skip (default 0)"),
        int_parameter("limit", 1, most, f"{what} to answer (default {default}, at most {most})"),
    ]


# compare.logic.stats.parse_growth_limit: a percentage or bytes, with a unit (build compare's
# gate, the alerts' category growth)
GROWTH: Schema = {
    "type": "string",
    "pattern": r"^\s*\d+(?:\.\d+)?\s*(?:%|[Bb]|[KkMmGg][Ii]?[Bb])?\s*$",
}

# Text in a path or query never holds a NUL (`core.middleware.refuse_nul_characters`).
NO_NUL = r"^[^\x00]*$"
# A raw request body of any bytes, at least one (`http.declared_length` refuses an empty one).
NONEMPTY_BINARY: Schema = {"type": "string", "format": "binary", "minLength": 1}
NO_NUL_SEGMENT = r"^[^/\x00]+$"


# --- the schema class -------------------------------------------------------------------------
class AutoSchema(BaseAutoSchema):
    """Views without a serializer are documented as answering a JSON object (their
    `extend_schema` says which keys), instead of being left out of the schema; every operation
    gets the parameter rules and error answers of this module's docstring."""

    def _get_request_body(self, direction: str = "request") -> Schema | None:
        """Every body an operation of this API takes is required: an upload of nothing, a PATCH
        that changes nothing, are refused (400)."""
        body: Schema | None = super()._get_request_body(direction)  # type: ignore[no-untyped-call]
        if body is not None:
            body["required"] = True
        return body

    def get_request_serializer(self) -> Serializer[Any] | type[Serializer[Any]] | None:
        if getattr(self.view, "get_serializer", None) is None:
            return None
        return super().get_request_serializer()

    # drf-spectacular documents an OpenApiTypes answered here as it does one given to
    # extend_schema(responses=...); its annotation names serializers only.
    def get_response_serializers(  # type: ignore[override]
        self,
    ) -> Serializer[Any] | type[Serializer[Any]] | OpenApiTypes | None:
        if getattr(self.view, "get_serializer", None) is None:
            return OpenApiTypes.OBJECT
        return super().get_response_serializers()

    def _get_parameters(self) -> list[Schema]:
        parameters: list[Schema] = super()._get_parameters()
        for parameter in parameters:
            schema = parameter["schema"]
            if parameter["in"] == "path" and schema.get("type") == "integer":
                schema.update(format="int64", minimum=1, maximum=MAX_INT64)
            elif parameter["in"] == "path" and schema.get("type") == "string":
                schema.setdefault("pattern", NO_NUL_SEGMENT)  # Django's <str:…>: one segment
            elif parameter["in"] == "query":
                if schema.get("type") == "boolean":
                    parameter["schema"] = schema = dict(FLAG)
                for text in (schema, schema.get("items") or {}):
                    if text.get("type") == "string" and "enum" not in text:
                        text.setdefault("pattern", NO_NUL)
                # A list's empty items are skipped by the views; as `allowEmptyValue` schemathesis
                # would read it as "a list, or an empty string" and call one item invalid.
                if not parameter.get("required") and schema.get("type") != "array":
                    parameter["allowEmptyValue"] = True
                elif schema.get("type") == "string":
                    schema.setdefault("minLength", 1)  # an empty required value is a missing one
        return parameters

    def _error_statuses(self) -> set[int]:
        parameters = self._get_parameters()
        statuses = set()
        if self.method in ("POST", "PUT", "PATCH") or any(p["in"] == "query" for p in parameters):
            statuses.add(400)
        if any(p["in"] == "path" for p in parameters):
            statuses.add(404)
        requirements = self.get_auth()
        if any(requirements):
            statuses |= {401, 429}
        if self.method not in ("GET", "HEAD", "OPTIONS") and any(
            "cookieAuth" in r for r in requirements
        ):
            statuses.add(403)
        return statuses

    def _get_response_bodies(self, direction: str = "response") -> Schema:
        responses: Schema = super()._get_response_bodies(direction)  # type: ignore[arg-type]
        for status in sorted(self._error_statuses()):
            if str(status) not in responses:
                responses[str(status)] = self._get_response_for_code(  # type: ignore[no-untyped-call]
                    error(status), str(status), direction=direction
                )
        return responses


class ApiTokenScheme(OpenApiAuthenticationExtension):
    target_class = "memdash.core.auth.ApiTokenAuthentication"
    name = "apiToken"

    def get_security_definition(self, auto_schema: BaseAutoSchema) -> dict[str, Any]:
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": "`Token <personal API token>`",
        }


class IngestKeyScheme(OpenApiAuthenticationExtension):
    target_class = "memdash.core.auth.IngestKeyAuthentication"
    name = "ingestKey"

    def get_security_definition(self, auto_schema: BaseAutoSchema) -> dict[str, Any]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "`Bearer <ingest key>`: an app's ingest key",
        }


# The upload doors read their key themselves (they answer a refusal as the upload it made):
# their `extend_schema(auth=INGEST_KEY)` says so. (drf-spectacular takes security requirements
# here; its annotation says names.)
INGEST_KEY: Any = [{"ingestKey": []}]


# A category by its hash (allocations' `category_hash`), as links name it: a name may be of any
# length, and a link must stay short enough for every server's request line.
CATEGORY_HASH_PARAMETER = OpenApiParameter(
    "category_hash",
    {"type": "string", "pattern": r"^-?\d{1,19}$"},
    description="a category by its hash (what links use, whatever the name's length); 404 when "
    "no category has it",
)
