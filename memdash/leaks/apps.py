from django.apps import AppConfig


class LeaksConfig(AppConfig):
    name = "memdash.leaks"
    label = "leaks"
