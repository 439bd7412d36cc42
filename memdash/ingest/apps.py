from django.apps import AppConfig


class IngestConfig(AppConfig):
    name = "memdash.ingest"
    label = "ingest"
