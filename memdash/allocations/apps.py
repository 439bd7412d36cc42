from django.apps import AppConfig


class AllocationsConfig(AppConfig):
    """Floor 2: the allocation data every lens reads (snapshots, their rows and stored totals)."""

    name = "memdash.allocations"
    label = "allocations"
