"""Pages and API about names: an app's debug files, and which images of a snapshot or a build
have frames without names (with the command that uploads their debug files)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.db.models import QuerySet
from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django.shortcuts import get_object_or_404, render
from drf_spectacular.utils import extend_schema
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from memdash.allocations.models import Snapshot
from memdash.allocations.reads import names as symbol_selectors
from memdash.allocations.reads import snapshots as selectors
from memdash.core.models import App, Build
from memdash.core.web.export import csv_table
from memdash.core.web.http import app_or_404, found
from memdash.snapshots.web.export import debug_files_csv, missing_images_csv
from memdash.snapshots.web.openapi import DEBUG_FILES, SNAPSHOT_SYMBOLS
from memdash.symbols import reads as symbols
from memdash.symbols.logic.names import debug_file_kind


def _missing_context(
    request: HttpRequest, app: App, snapshots: QuerySet[Snapshot], **extra: object
) -> dict[str, object]:
    return {
        "app": app,
        "missing": symbol_selectors.missing_images(app, snapshots),
        "jobs": list(symbols.active_jobs(app)),
        "upload_url": request.build_absolute_uri(f"/api/v1/apps/{app.pk}/debug-files"),
        **extra,
    }


@login_required
def snapshot_symbols(request: HttpRequest, snapshot_id: int) -> HttpResponseBase:
    with found():
        snapshot = selectors.snapshot_for_user(request.user, snapshot_id)
    snapshots = Snapshot.objects.filter(pk=snapshot.pk)
    if csv_table(request) is not None:
        missing = symbol_selectors.missing_images(snapshot.app, snapshots)
        return missing_images_csv(f"snapshot-{snapshot.pk}-missing-debug-files", missing, False)
    context = _missing_context(
        request, snapshot.app, snapshots, snapshot=snapshot,
        status=symbol_selectors.snapshot_status(snapshot),
    )  # fmt: skip
    return render(request, "snapshots/missing_symbols.html", context)


@login_required
def build_symbols(request: HttpRequest, app_id: int, build_id: int) -> HttpResponseBase:
    app = app_or_404(request.user, app_id)
    build = get_object_or_404(Build, pk=build_id, app=app)
    snapshots = Snapshot.objects.filter(build=build)
    if csv_table(request) is not None:
        name = f"build-{build.version}-{build.number}-missing-debug-files"
        return missing_images_csv(name, symbol_selectors.missing_images(app, snapshots), True)
    context = _missing_context(request, app, snapshots, build=build)
    return render(request, "snapshots/missing_symbols.html", context)


@login_required
def debug_files(request: HttpRequest, app_id: int) -> HttpResponseBase:
    app = app_or_404(request.user, app_id)
    files = list(symbols.debug_files(app).select_related("key", "user"))
    builds = symbol_selectors.builds_using(app, {f.debug_id for f in files})
    rows = [(f, builds.get(f.debug_id, [])) for f in files]
    if csv_table(request) is not None:
        return debug_files_csv(f"{app.bundle_id}-debug-files", rows)
    context = {
        "app": app,
        "rows": rows,
        "jobs": list(symbols.active_jobs(app)),
        "upload_url": request.build_absolute_uri(f"/api/v1/apps/{app.pk}/debug-files"),
        # the example names the kind of debug file the app's platform loads: an Android app's
        # unstripped .so, an iOS app's zipped dSYM
        **_upload_example(app),
    }
    return render(request, "snapshots/debug_files.html", context)


def _upload_example(app: App) -> dict[str, str]:
    if debug_file_kind("", app.platform) == "elf":
        return {"example_path": "libchat.so", "example_body": "libchat.so"}
    return {"example_path": "Chat.app.dSYM", "example_body": "Chat.app.dSYM.zip"}


@extend_schema(
    summary="Images of a snapshot with frames that have no name, most bytes first",
    responses={200: SNAPSHOT_SYMBOLS},
)
@api_view(["GET"])
def api_snapshot_symbols(request: Request, snapshot_id: int) -> Response:
    with found():
        snapshot = selectors.snapshot_for_user(request.user, snapshot_id)
    status = symbol_selectors.snapshot_status(snapshot)
    missing = symbol_selectors.missing_images(snapshot.app, Snapshot.objects.filter(pk=snapshot.pk))
    return Response(
        {
            "snapshot": snapshot.pk,
            "unsymbolicated_bytes": status.unsymbolicated_bytes,
            "share": round(status.share, 4),
            "symbolication": [job.as_json() for job in status.jobs],
            "images": [image.as_json() for image in missing],
        }
    )


@extend_schema(
    summary="An app's debug files, with the builds whose snapshots use each",
    responses={200: DEBUG_FILES},
)
@api_view(["GET"])
def api_debug_files(request: Request, app_id: int) -> Response:
    app = app_or_404(request.user, app_id)
    files = list(symbols.debug_files(app))
    builds = symbol_selectors.builds_using(app, {f.debug_id for f in files})
    return Response(
        {
            "debug_files": [
                {**f.as_json(), "builds": [str(b) for b in builds.get(f.debug_id, [])]}
                for f in files
            ]
        }
    )
