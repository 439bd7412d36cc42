"""Pages by what they show, so a page can link to another floor's page without importing it.

A lower floor links to "the page of this build" or "the diff of this snapshot" by a kind name;
the site, the one floor that knows every lens, says at start-up which URL name draws each kind
(`memdash.site.apps`). A lens never names another lens's URLs, and core names none of them.
"""

from __future__ import annotations

from django.urls import reverse

_PAGES: dict[str, str] = {}


class UnknownPage(LookupError):
    """No installed lens draws this kind of page."""


def serve(kind: str, url_name: str) -> None:
    """Say that the URL `url_name` draws the page of `kind` (called once, by the site)."""
    _PAGES[kind] = url_name


def is_served(kind: str) -> bool:
    return kind in _PAGES


def page_url(kind: str, *args: object) -> str:
    """The URL of the page of `kind` for these URL arguments."""
    try:
        url_name = _PAGES[kind]
    except KeyError:
        raise UnknownPage(kind) from None
    return reverse(url_name, args=args)


# The app's navigation bar: (URL name of the page, label), in order; said by the site too.
APP_NAV: list[tuple[str, str]] = []


def add_to_app_nav(url_name: str, label: str) -> None:
    APP_NAV.append((url_name, label))
