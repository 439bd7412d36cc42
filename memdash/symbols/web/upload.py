"""The debug-file door: `POST /api/v1/apps/<id>/debug-files` with the app's ingest key.

The body (raw, or a multipart `file` field) is streamed to a scratch file within
MEMDASH_MAX_DEBUG_FILE_BYTES by `reading.copy_limited`, so a 1 GB dSYM zip never sits in memory
and a body past the limit is refused (413) while it is read. A raw body needs its Content-Length
(`core.web.http.declared_length`): a chunked one is refused (411) rather than read as empty, and one
that ends before its length is refused (400) rather than kept in part.
`memdash.symbols.writes` then checks and keeps its objects; a refusal (400 what was wrong, 403
another app's key, 411, 413) stores nothing. The answer lists each object (stored, replaced,
same, kept) and the symbolication job that names the frames already stored.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from django.conf import settings
from django.http.multipartparser import MultiPartParserError
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.decorators import (
    api_view,
    authentication_classes,
    parser_classes,
    permission_classes,
)
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response

from memdash.core.auth import ingest_key_from_request
from memdash.core.logic.errors import InvalidUpload, UploadRefused, WrongApp
from memdash.core.logic.reading import copy_limited, read_chunks, whole_body
from memdash.core.models import App, IngestKey
from memdash.core.web.http import declared_length
from memdash.core.web.schema import INGEST_KEY, errors
from memdash.core.writes.uploads import Progress, no_progress
from memdash.symbols import writes as symbols
from memdash.symbols.web.openapi import DEBUG_FILES_STORED
from memdash.symbols.writes import DebugFilesResult


def refused(error: UploadRefused) -> Response:
    return Response({"error": error.message, "path": error.path}, status=error.status)


def receive_debug_files(
    app: App,
    chunks: Iterable[bytes],
    *,
    file_name: str = "",
    image_name: str = "",
    key: IngestKey | None = None,
    size: int | None = None,
    progress: Progress = no_progress,
) -> DebugFilesResult:
    """Stream the body to a scratch file, then store its objects (raises UploadRefused).
    `progress` hears the bytes read (of `size`, when known), then what `store_debug_files` says:
    the zip unpacked, each file looked at, each object checked (its symcache built), stored."""

    def counted() -> Iterator[bytes]:
        done = 0
        for chunk in chunks:
            done += len(chunk)
            if size:
                progress("read", min(done / size, 1.0))
            yield chunk

    progress("read", 0.0)
    with symbols.scratch_dir() as scratch:
        body = Path(scratch) / (Path(file_name).name or "body")
        with open(body, "wb") as out:
            copy_limited(counted(), out, settings.MEMDASH_MAX_DEBUG_FILE_BYTES)
        progress("read", 1.0)
        image_name = image_name or Path(file_name).name
        return symbols.store_debug_files(
            app, body, image_name=image_name, key=key, progress=progress
        )


def _body(request: Request, declared: int) -> tuple[Iterable[bytes], str]:
    """(chunks, file name) of a multipart `file` field or of the raw body (all `declared`
    bytes of it, or refused at its end)."""
    django_request = request._request
    if django_request.META.get("CONTENT_TYPE", "").startswith("multipart/form-data"):
        upload = django_request.FILES.get("file")
        if upload is None:
            raise InvalidUpload("the multipart form has no `file` field", "file")
        return upload.chunks(), upload.name or ""
    chunks = whole_body(read_chunks(django_request), declared)
    return chunks, request.query_params.get("filename", "")


@extend_schema(
    summary="Upload debug files (dSYM zip, Mach-O, ELF, Breakpad .sym)",
    description="Body: the file (raw) or a multipart form with a `file` field. Authenticated "
    "with `Authorization: Bearer <ingest key>` of this app. Each object is kept once per "
    "(debug id, architecture); the frames already stored in that image are named by a job.",
    request={
        "application/octet-stream": OpenApiTypes.BINARY,
        "multipart/form-data": {
            "type": "object",
            "properties": {"file": {"type": "string", "format": "binary"}},
            "required": ["file"],
        },
    },
    parameters=[
        OpenApiParameter("name", str, required=False, description="image name of a lone file"),
        OpenApiParameter("filename", str, required=False),
    ],
    responses={
        201: OpenApiResponse(DEBUG_FILES_STORED, description="New objects were stored."),
        200: OpenApiResponse(DEBUG_FILES_STORED, description="Every object was here already."),
        **errors(403, 411, 413),
    },
    auth=INGEST_KEY,
)
@api_view(["POST"])
@authentication_classes([])
@permission_classes([AllowAny])
@parser_classes([])
def api_debug_files(request: Request, app_id: int) -> Response:
    key = ingest_key_from_request(request)
    if key is None:
        return Response(
            {"error": "a valid ingest key is required: Authorization: Bearer <key>"},
            status=status.HTTP_401_UNAUTHORIZED,
            headers={"WWW-Authenticate": "Bearer"},
        )
    if key.app_id != app_id:
        return refused(WrongApp(f"this key belongs to {key.app.bundle_id}, not app {app_id}"))
    try:
        declared = declared_length(request.META, settings.MEMDASH_MAX_DEBUG_FILE_BYTES)
        chunks, file_name = _body(request, declared)
        result = receive_debug_files(
            key.app, chunks, file_name=file_name,
            image_name=request.query_params.get("name", ""), key=key,
        )  # fmt: skip
    except MultiPartParserError as exc:
        return refused(InvalidUpload(f"the multipart form cannot be read: {exc}", "Content-Type"))
    except UploadRefused as exc:
        return refused(exc)
    new = any(o.outcome in ("stored", "replaced") for o in result.objects)
    return Response(result.as_json(), status=status.HTTP_201_CREATED if new else status.HTTP_200_OK)
