"""JSON rendering with orjson: a statistics answer of 10,000 rows is rendered several times
faster than with the standard library encoder that DRF uses by default. JSON request bodies are
read by DRF's parser, refusing a key named twice in one object (`StrictJSONParser`)."""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import IO, Any

import orjson
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser
from rest_framework.renderers import JSONRenderer
from rest_framework.utils.encoders import JSONEncoder

from memdash.core.logic.errors import InvalidUpload
from memdash.core.logic.json_keys import refuse_duplicate_keys

_fallback = JSONEncoder()


class ORJSONRenderer(JSONRenderer):
    def render(
        self,
        data: Any,
        accepted_media_type: str | None = None,
        renderer_context: Mapping[str, Any] | None = None,
    ) -> bytes:
        if data is None:
            return b""
        return orjson.dumps(data, default=_fallback.default, option=orjson.OPT_NON_STR_KEYS)


class StrictJSONParser(JSONParser):
    """DRF's JSON parser, refusing (400, with the key's path) a body that names a key twice in
    one object, rather than keeping the last value as the standard library does."""

    def parse(
        self,
        stream: IO[Any],
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> Any:
        raw = stream.read() if stream is not None else b""
        try:
            refuse_duplicate_keys(raw)
        except InvalidUpload as exc:
            raise ParseError({"error": exc.message, "path": exc.path}) from None
        return super().parse(io.BytesIO(raw), media_type, parser_context)
