from django.apps import AppConfig


class TriageConfig(AppConfig):
    name = "memdash.triage"
    label = "triage"
