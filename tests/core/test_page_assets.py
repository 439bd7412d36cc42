"""What a page loads: the plotly bundle only where a chart is drawn (the login page and the
tables load none of it), and then run after the page is parsed; static files collected with
hashed names where whitenoise serves them compressed and for ever."""

from __future__ import annotations

import json
import posixpath
import re
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.urls import reverse

from memdash.core.staticfiles import CollectedStaticFilesStorage

pytestmark = pytest.mark.django_db


def test_login_page_loads_no_plotly(client):
    html = client.get(reverse("login")).content.decode()
    assert "plotly" not in html and "charts.js" not in html


def test_a_page_without_a_chart_loads_no_plotly(member_client, app):
    html = member_client.get(reverse("site:app_settings", args=[app.pk])).content.decode()
    assert "plotly" not in html and "charts.js" not in html


def test_a_page_with_a_chart_preloads_plotly_for_charts_js(member_client, app, demo_context):
    from memdash.allocations import demo as allocations_demo

    allocations_demo.load(demo_context)
    html = member_client.get(reverse("snapshots:app_detail", args=[app.pk])).content.decode()
    assert 'data-chart="build-trend-data"' in html
    assert '<link rel="preload" href="/static/vendor/plotly.min.js" as="script">' in html
    # charts.js runs the bundle after DOMContentLoaded: no <script src> of plotly holds it up
    charts = '<script type="module" src="/static/js/charts.js"'
    assert charts + ' data-plotly="/static/vendor/plotly.min.js">' in html
    assert '<script src="/static/vendor/plotly.min.js"' not in html
    assert html.count("plotly.min.js") == 2


def test_collected_static_files_have_hashed_names_under_debug_too(settings, tmp_path):
    """The demo serves DEBUG pages from collected files: their URLs carry the content hash, so
    whitenoise answers them with far-future cache headers (as in production)."""
    settings.DEBUG = True
    settings.STATIC_ROOT = tmp_path
    (tmp_path / "staticfiles.json").write_text(
        '{"paths": {"css/memdash.css": "css/memdash.0123456789ab.css"}, "version": "1.1"}'
    )
    storage = CollectedStaticFilesStorage(location=tmp_path)
    assert storage.url("css/memdash.css") == "/static/css/memdash.0123456789ab.css"


def test_brotli_is_installed_for_the_compressed_copies():
    import brotli  # noqa: F401  (whitenoise writes .br files only when it can import it)

    assert "whitenoise.runserver_nostatic" in settings.INSTALLED_APPS


def test_collectstatic_leaves_source_maps_out_and_compresses_the_hashed_names(settings, tmp_path):
    """Source maps are not collected (a bundle's `sourceMappingURL` comment stays as it is, no
    map to hash), and only the hashed files, those pages link to, get brotli and gzip copies."""
    source, root = tmp_path / "source", tmp_path / "root"
    (source / "js").mkdir(parents=True)
    script = "console.log('memdash');\n" * 200 + "//# sourceMappingURL=bundle.js.map\n"
    (source / "js" / "bundle.js").write_text(script)
    (source / "js" / "bundle.js.map").write_text('{"version": 3, "mappings": ""}')
    settings.STATICFILES_DIRS = [source]
    settings.STATICFILES_FINDERS = ["django.contrib.staticfiles.finders.FileSystemFinder"]
    settings.STATIC_ROOT = root
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "memdash.core.staticfiles.CollectedStaticFilesStorage"},
    }
    call_command("collectstatic", "--no-input", verbosity=0)
    collected = sorted(str(path.relative_to(root)) for path in root.rglob("*") if path.is_file())
    hashed = next(name for name in collected if name.startswith("js/bundle.") and
                  name.endswith(".js") and name != "js/bundle.js")  # fmt: skip
    assert collected == sorted(
        ["js/bundle.js", hashed, f"{hashed}.br", f"{hashed}.gz", "staticfiles.json"]
    )
    assert (root / hashed).read_text() == script  # the comment as it was


# a module's import of another by relative path (a statement, not a comment's example)
MODULE_IMPORT = re.compile(r"""(?m)^(?:import|export)\b[^;'"]*?\bfrom\s*["'](\.{1,2}/[^"']+)["']""")


def test_collected_modules_import_each_other_by_their_hashed_names(settings, tmp_path):
    """collectstatic with the production storage: every import of a collected module names the
    hashed file of the module it imports, so the browser never mixes a new module with an old
    one it kept (hashed files are cached for ever)."""
    settings.STATIC_ROOT = tmp_path
    settings.STATICFILES_FINDERS = ["django.contrib.staticfiles.finders.FileSystemFinder"]
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "memdash.core.staticfiles.CollectedStaticFilesStorage"},
    }
    call_command("collectstatic", "--no-input", "--ignore", "vendor", verbosity=0)
    manifest = json.loads((tmp_path / "staticfiles.json").read_text())["paths"]
    hashed = set(manifest.values())
    modules = {name: hashed_name for name, hashed_name in manifest.items() if name.endswith(".js")}
    assert "js/calltree_page.js" in modules and "js/flame/layout.js" in modules
    imports = 0
    for name, hashed_name in modules.items():
        text = (tmp_path / hashed_name).read_text()
        for target in MODULE_IMPORT.findall(text):
            resolved = posixpath.normpath(posixpath.join(posixpath.dirname(hashed_name), target))
            assert resolved in hashed, f"{name} imports {target}, not a collected hashed name"
            imports += 1
    assert imports >= 20  # the entries, the trees and the flame graph's parts
    # the page's entry imports the tree by its hashed name
    entry = (tmp_path / modules["js/calltree_page.js"]).read_text()
    assert f'from "./{posixpath.basename(modules["js/calltree.js"])}"' in entry


SCRIPT_TAG = re.compile(r"<script\b[^>]*>", re.IGNORECASE)


def test_every_template_script_is_a_module_of_our_static_files():
    """A page's scripts are ES modules from our static files (they import what they need: no
    hand-ordered chain, no globals) and never inline (the CSP would refuse them)."""
    roots = [
        Path(settings.BASE_DIR) / "templates",
        *Path(settings.BASE_DIR, "memdash").glob("*/templates"),
    ]
    tags = [
        (path, tag)
        for root in roots
        for path in root.rglob("*.html")
        for tag in SCRIPT_TAG.findall(path.read_text())
    ]
    assert len(tags) >= 6
    for path, tag in tags:
        assert 'type="module"' in tag and "src=\"{% static '" in tag, f"{path.name}: {tag}"
