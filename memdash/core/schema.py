"""OpenAPI: function views answer plain JSON objects; API tokens are a header scheme."""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema as BaseAutoSchema
from drf_spectacular.types import OpenApiTypes


class AutoSchema(BaseAutoSchema):
    """Views without a serializer are documented as answering a JSON object (their docstring
    and `extend_schema` say which keys), instead of being left out of the schema."""

    def get_request_serializer(self):
        if getattr(self.view, "get_serializer", None) is None:
            return None
        return super().get_request_serializer()

    def get_response_serializers(self):
        if getattr(self.view, "get_serializer", None) is None:
            return OpenApiTypes.OBJECT
        return super().get_response_serializers()


class ApiTokenScheme(OpenApiAuthenticationExtension):
    target_class = "memdash.core.auth.ApiTokenAuthentication"
    name = "apiToken"

    def get_security_definition(self, auto_schema):
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": "`Token <personal API token>`",
        }
