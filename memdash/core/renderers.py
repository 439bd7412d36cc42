"""JSON rendering with orjson: a statistics answer of 10,000 rows is rendered several times
faster than with the standard library encoder that DRF uses by default."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson
from rest_framework.renderers import JSONRenderer
from rest_framework.utils.encoders import JSONEncoder

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
