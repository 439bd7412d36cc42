from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "memdash.core"
    label = "core"

    def ready(self) -> None:
        from memdash.core.web import schema  # noqa: F401  (registers the OpenAPI auth extension)
