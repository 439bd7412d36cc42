from django.apps import AppConfig


class CyclesConfig(AppConfig):
    name = "memdash.cycles"
    label = "cycles"
