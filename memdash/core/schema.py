"""OpenAPI: function views answer plain JSON objects; API tokens are a header scheme."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema as BaseAutoSchema
from drf_spectacular.types import OpenApiTypes
from rest_framework.serializers import Serializer


class AutoSchema(BaseAutoSchema):
    """Views without a serializer are documented as answering a JSON object (their docstring
    and `extend_schema` say which keys), instead of being left out of the schema."""

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
