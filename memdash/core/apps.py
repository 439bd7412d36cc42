from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "memdash.core"
    label = "core"

    def ready(self) -> None:
        from django.urls import register_converter

        from memdash.core.web import schema  # noqa: F401  (registers the OpenAPI auth extension)
        from memdash.core.web.converters import IdConverter

        register_converter(IdConverter, "id")  # before any URLconf is read
