"""The web process's start (memdash/wsgi.py) loads the URLconf and freezes what it loaded, so
that the cyclic collector's full collections do not walk it (docs/performance.md, Pages)."""

import gc
import importlib


def test_the_loaded_code_is_frozen_out_of_the_collector():
    gc.unfreeze()
    try:
        wsgi = importlib.reload(importlib.import_module("memdash.wsgi"))
        assert callable(wsgi.application)
        assert gc.get_freeze_count() > 10_000  # Django, DRF and memdash's modules at least
    finally:
        gc.unfreeze()
