from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "memdash.core"
    label = "core"

    def ready(self) -> None:
        # The OpenAPI auth extension (memdash.core.web.schema) registers itself when the URLconf
        # imports the views that document themselves with it: a command that serves no page
        # (import_snapshot, db_worker) does not load drf-spectacular and DRF for it.
        from django.urls import register_converter

        from memdash.core.web.converters import IdConverter

        register_converter(IdConverter, "id")  # before any URLconf is read
