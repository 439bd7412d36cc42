"""The five floors, for what import-linter cannot see: URL names in templates and in
`reverse`/`redirect` calls only go down a floor or stay in their app, and every page kind a
lower floor links to (`core.links`) is served by the site."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.conf import settings
from django.urls import get_resolver, reverse

from memdash.floors import FLOOR_OF, LENSES
from memdash.site.apps import APP_NAV, PAGES
from memdash.site.urls import DOMAINS

ROOT = Path(__file__).resolve().parents[2]
FLOORS = FLOOR_OF  # memdash/floors.py
URL_NAME = re.compile(
    r"""(?:\{%\s*url\s+|\b(?:reverse|reverse_lazy|redirect)\(\s*)["']([\w-]+):[\w-]+["']"""
)
PAGE_KIND = re.compile(r"""(?:\{%\s*page\s+|\bpage_url\(\s*)["']([\w-]+)["']""")


def app_files() -> list[tuple[str, Path]]:
    """(app, file) for every Python module and template of memdash; top-level templates/ are
    the site's."""
    files = [("site", path) for path in (ROOT / "templates").rglob("*.html")]
    for app in FLOORS:
        for path in (ROOT / "memdash" / app).rglob("*"):
            if path.suffix in {".py", ".html"} and "migrations" not in path.parts:
                files.append((app, path))
    return files


def test_every_app_has_a_floor():
    apps = {p.name for p in (ROOT / "memdash").iterdir() if (p / "apps.py").exists()}
    assert apps == set(FLOORS)


@pytest.mark.parametrize("app,path", app_files(), ids=lambda v: str(v).split("memdash/")[-1])
def test_url_names_only_go_down_a_floor(app: str, path: Path):
    for namespace in URL_NAME.findall(path.read_text()):
        assert namespace in FLOORS, f"{path}: unknown URL namespace {namespace!r}"
        if namespace == app:
            continue
        assert FLOORS[namespace] < FLOORS[app] and not (
            FLOORS[app] == 3 and FLOORS[namespace] == 3
        ), (
            f"{path} ({app}, floor {FLOORS[app]}) names a URL of {namespace}"
            f" (floor {FLOORS[namespace]})"
        )


def test_every_page_kind_linked_to_is_served():
    used = {
        (kind, path.relative_to(ROOT))
        for _app, path in app_files()
        for kind in PAGE_KIND.findall(path.read_text())
    }
    assert used, "no page links found: the pattern is out of date"
    assert not {(kind, str(path)) for kind, path in used if kind not in PAGES}


def test_pages_served_by_the_site_exist():
    resolver = get_resolver()
    for kind, url_name in PAGES.items():
        namespace, name = url_name.split(":")
        assert namespace in resolver.namespace_dict, kind
        names = resolver.namespace_dict[namespace][1].reverse_dict.keys()
        assert name in names, f"{kind}: {url_name} is not a URL name"


def test_every_lens_declared_once_is_installed_served_and_navigable():
    namespaces = get_resolver().namespace_dict
    for lens in LENSES:
        assert f"memdash.{lens.name}" in settings.INSTALLED_APPS
        assert lens.name in DOMAINS and lens.name in namespaces
        assert set(lens.nav) | set(lens.nav_end) <= set(APP_NAV)
    for url_name, _label in APP_NAV:  # every entry of the bar is a page of an app
        assert reverse(url_name, args=[1]).startswith("/apps/1/")
