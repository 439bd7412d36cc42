from django.apps import AppConfig


class FoomConfig(AppConfig):
    name = "memdash.foom"
    label = "foom"
    verbose_name = "FOOM (sessions)"
