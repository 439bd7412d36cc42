"""The storage of collected static files: hashed names, brotli and gzip copies (whitenoise)."""

from __future__ import annotations

from whitenoise.storage import CompressedManifestStaticFilesStorage

# Our own scripts: ES modules that import each other by relative path (static/js/).
OWN_MODULES = "js/*.js"


class CollectedStaticFilesStorage(CompressedManifestStaticFilesStorage):  # type: ignore[misc]  # untyped base
    """Whitenoise's storage, with hashed URLs under DEBUG too (Django's own gives the plain
    names when DEBUG is on): the demo serves its pages as production does, every file under a
    name that changes with its content, so whitenoise can let browsers keep it for ever.

    The pages load ES modules that import each other (`import {Tree} from "./tree.js"`): their
    imports are rewritten to the hashed names too (Django's `support_js_module_import_aggregation`),
    so a module never runs beside a stale copy of another. Only in our own scripts: the vendored
    bundles (plotly, swagger-ui, the admin's) are classic scripts, where the rewriting's patterns
    would only cost time and could take a string for an import."""

    support_js_module_import_aggregation = True
    _js_module_import_aggregation_patterns = (
        OWN_MODULES,
        CompressedManifestStaticFilesStorage._js_module_import_aggregation_patterns[1],
    )

    def url(self, name: str | None, force: bool = False) -> str:
        url: str = super().url(name, force=True)
        return url
