"""Throttling: failed API authentication per client address, and uploads per ingest key.

Failed logins are django-axes's (settings: `AXES_*`), which takes the client's address from
`client_address` here, so a login and an API secret are judged from the same address. The counters
live in the `throttle` cache: in memory per process by default (the embedded setup is one
process), in Redis with `REDIS_URL`, shared by every web process.

Both limits count hits in a fixed window that starts at the first hit (a well-known fixed-window
limiter): `MEMDASH_AUTH_FAILURE_LIMIT` unknown tokens or keys from one address within
`MEMDASH_AUTH_LOCKOUT_SECONDS` lock that address out of token and key authentication for
`MEMDASH_AUTH_LOCKOUT_SECONDS` (even with a right secret); an ingest key sends at most
`MEMDASH_UPLOADS_PER_KEY_PER_MINUTE` uploads a minute. 0 turns a limit off.
"""

from __future__ import annotations

import ipaddress
import math
import time

from django.conf import settings
from django.core.cache import BaseCache, caches
from django.http import HttpRequest

CACHE = "throttle"


def _cache() -> BaseCache:
    return caches[CACHE]


def _ip_or_none(text: str) -> str | None:
    try:
        return str(ipaddress.ip_address(text.strip()))
    except ValueError:
        return None


def client_address(request: HttpRequest) -> str:
    """The client's IP address: the last address of `MEMDASH_TRUSTED_PROXY_HEADER` when that is
    set (the one the proxy in front of memdash wrote; earlier ones the client may have written
    itself), else the connection's peer. Never anything but an IP address: a header that holds
    none counts as absent."""
    header = settings.MEMDASH_TRUSTED_PROXY_HEADER
    if header:
        forwarded = request.META.get("HTTP_" + header.upper().replace("-", "_"), "")
        address = _ip_or_none(forwarded.rsplit(",", 1)[-1])
        if address is not None:
            return address
    return _ip_or_none(request.META.get("REMOTE_ADDR", "")) or "0.0.0.0"  # noqa: S104


def count_hit(name: str, window: int) -> tuple[int, int]:
    """Counts a hit of `name` in its window (which starts at its first hit and lasts `window`
    seconds): (hits so far in the window, seconds until the window ends, at least 1)."""
    cache = _cache()
    now = time.time()
    cache.add(f"{name}:start", now, window)
    hits = 1
    if not cache.add(name, 1, window):
        try:
            hits = cache.incr(name)
        except ValueError:  # the window ended between the two calls
            cache.set(name, 1, window)
    start = cache.get(f"{name}:start", now)
    return hits, max(1, math.ceil(start + window - now))


def auth_lock_wait(request: HttpRequest) -> int | None:
    """Seconds until the client's address may authenticate with a token or key again; None when
    it is not locked out."""
    until = _cache().get(f"auth-lock:{client_address(request)}")
    if until is None:
        return None
    wait = math.ceil(until - time.time())
    return wait if wait > 0 else None


def note_auth_failure(request: HttpRequest) -> None:
    """An unknown token or key from the client's address; the last one the limit allows locks
    the address out for `MEMDASH_AUTH_LOCKOUT_SECONDS`."""
    limit, window = settings.MEMDASH_AUTH_FAILURE_LIMIT, settings.MEMDASH_AUTH_LOCKOUT_SECONDS
    if limit <= 0:
        return
    address = client_address(request)
    failures, _ = count_hit(f"auth-failures:{address}", window)
    if failures >= limit:
        _cache().set(f"auth-lock:{address}", time.time() + window, window)


def upload_quota_wait(key_id: int) -> int | None:
    """Counts an upload with the ingest key `key_id`: None while within the key's quota, else the
    seconds until its minute ends."""
    quota = settings.MEMDASH_UPLOADS_PER_KEY_PER_MINUTE
    if quota <= 0:
        return None
    uploads, wait = count_hit(f"uploads:{key_id}", 60)
    return wait if uploads > quota else None
