"""
WSGI config for memdash project.

It exposes the WSGI callable as a module-level variable named ``application``.

For more information on this file, see
https://docs.djangoproject.com/en/6.1/howto/deployment/wsgi/
"""

import gc
import os

from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memdash.settings")

application = get_wsgi_application()

# Load the URLconf now (and with it every view, DRF and the chart code), then move all that was
# loaded (~120,000 objects) out of the cyclic collector's generations: they live as long as the
# process, and a full collection otherwise walks them all. A request that allocates much (every
# category of a snapshot: 5,000 rows) set one off every twenty-odd requests, and paid for it
# more than its own work; frozen, a full collection is a small fraction of that. Objects made
# later are collected as usual.
url_patterns = get_resolver().url_patterns
gc.freeze()
