from django.apps import AppConfig


class CompareConfig(AppConfig):
    name = "memdash.compare"
    label = "compare"
