from django.apps import AppConfig


class SnapshotsConfig(AppConfig):
    name = "memdash.snapshots"
    label = "snapshots"
