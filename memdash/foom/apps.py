from typing import Any

from django.apps import AppConfig
from django.db.models.signals import pre_delete


class FoomConfig(AppConfig):
    name = "memdash.foom"
    label = "foom"
    verbose_name = "FOOM (sessions)"

    def ready(self) -> None:
        # Runs carry no database constraint: they go here, in bulk, when an app or a build is
        # deleted (core.services), before the ORM deletes the rest.
        from memdash.core.models import App, Build
        from memdash.core.writes.apps import cascaded_from
        from memdash.foom.writes import sessions as services

        def app_deleting(sender: type, instance: App, **kwargs: Any) -> None:
            services.delete_app_sessions(instance.pk)

        def build_deleting(sender: type, instance: Build, **kwargs: Any) -> None:
            if not cascaded_from(kwargs.get("origin"), App):
                services.delete_build_sessions(instance.pk)

        # weak=False: the receivers are local functions, kept only by the signal.
        pre_delete.connect(app_deleting, sender=App, weak=False, dispatch_uid="foom.app")
        pre_delete.connect(build_deleting, sender=Build, weak=False, dispatch_uid="foom.build")
