from django.apps import AppConfig


class SymbolsConfig(AppConfig):
    """Between floors 1 and 2: an app's debug files, their symcaches and the lookups by image and
    offset, so that allocations (and everything above) can name the frames it stores."""

    name = "memdash.symbols"
    label = "symbols"
