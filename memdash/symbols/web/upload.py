"""The debug-file door: `POST /api/v1/apps/<id>/debug-files` with the app's ingest key, and the
upload's status at `GET /api/v1/apps/<id>/debug-files/uploads/<upload id>`.

The body (raw, or a multipart `file` field) is streamed to storage within
MEMDASH_MAX_DEBUG_FILE_BYTES (`writes.receive_debug_files`: a body past the limit is refused, 413,
while it is read) and the request answers 202 with the upload's status URL; unpacking, the caps
on what a zip holds, checking each object and making its symcache are the worker's
(`tasks.process_debug_files_task`). A raw body needs its Content-Length
(`core.web.http.declared_length`): a chunked one is refused (411) rather than read as empty, and
one that ends before its length is refused (400) rather than kept in part. A file name is kept
only as a name (`writes.clean_filename`: 400 for control characters or one too long). The
embedded default runs the task in the request, so its answer is already the outcome: 202 with
the objects once done, or the refusal's own status (400, 413) with `error` and `path`.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.conf import settings
from django.db import transaction
from django.http.multipartparser import MultiPartParserError
from django.shortcuts import get_object_or_404
from django.tasks import task_backends
from django.tasks.backends.immediate import ImmediateBackend
from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.authentication import SessionAuthentication
from rest_framework.decorators import (
    api_view,
    authentication_classes,
    parser_classes,
    permission_classes,
)
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response

from memdash.core.auth import (
    ApiTokenAuthentication,
    IngestKeyAuthentication,
    SignedInOrIngestKey,
    ingest_key_from_request,
)
from memdash.core.logic.errors import InvalidUpload, UploadRefused, WrongApp
from memdash.core.logic.reading import read_chunks, whole_body
from memdash.core.models import IngestKey
from memdash.core.reads.apps import apps_for_user
from memdash.core.web.http import declared_length
from memdash.core.web.schema import INGEST_KEY, NONEMPTY_BINARY, errors
from memdash.symbols import tasks, writes
from memdash.symbols.models import DebugFileUpload
from memdash.symbols.web.openapi import DEBUG_FILES_UPLOAD


def refused(error: UploadRefused) -> Response:
    return Response({"error": error.message, "path": error.path}, status=error.status)


def status_url(upload: DebugFileUpload) -> str:
    return reverse("symbols:api_debug_files_upload", args=[upload.app_id, upload.pk])


def upload_answer(upload: DebugFileUpload) -> Response:
    """202 while queued or done; a refused upload with its own status (400, 413)."""
    body = upload.as_json(status_url(upload))
    if upload.status == upload.REJECTED and upload.error_status:
        return Response(body, status=upload.error_status)
    return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": body["url"]})


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


# `writes.clean_filename`: no control characters, at most 255 characters.
FILENAME = {"type": "string", "maxLength": writes.MAX_FILENAME, "pattern": r"^[^\x00-\x1f\x7f]*$"}


@extend_schema(
    summary="Upload debug files (dSYM zip, Mach-O, ELF, Breakpad .sym)",
    description="Body: the file (raw) or a multipart form with a `file` field. Authenticated "
    "with `Authorization: Bearer <ingest key>` of this app. The body is stored and a worker "
    "unpacks and checks it: the answer is 202 with the upload's `url`, to ask until its "
    "`status` is `done` (with its objects, each kept once per (debug id, architecture), and "
    "the job that names the frames already stored) or `rejected` (with `error` and `path`).",
    request={
        "application/octet-stream": NONEMPTY_BINARY,
        "multipart/form-data": {
            "type": "object",
            "properties": {"file": {"type": "string", "format": "binary"}},
            "required": ["file"],
        },
    },
    parameters=[
        OpenApiParameter(
            "name", FILENAME, required=False, description="image name of a lone file"
        ),
        OpenApiParameter(
            "filename", FILENAME, required=False,
            description="the file's name (only its last part is kept; none for `..`)",
        ),
    ],
    responses={
        202: OpenApiResponse(DEBUG_FILES_UPLOAD, description="Stored; processed by a worker."),
        **errors(400, 403, 411, 413),
    },
    auth=INGEST_KEY,
)  # fmt: skip
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
        upload = writes.receive_debug_files(
            key.app, chunks, filename=file_name,
            image_name=request.query_params.get("name", ""), key=key,
        )  # fmt: skip
    except MultiPartParserError as exc:
        return refused(InvalidUpload(f"the multipart form cannot be read: {exc}", "Content-Type"))
    except UploadRefused as exc:
        return refused(exc)
    if isinstance(task_backends["default"], ImmediateBackend):
        writes.process_debug_files(upload)  # the embedded default: here and now
    else:
        transaction.on_commit(lambda: tasks.process_debug_files_task.enqueue(upload.pk))
    tasks.requeue_stale_in_passing()  # an upload is a pass: finds uploads of dead workers
    return upload_answer(upload)


@extend_schema(
    summary="An upload of debug files: its status, and once done its objects",
    description="With the ingest key that sent it (`Authorization: Bearer <key>`: the URL its "
    "202 answered), or a signed-in member of the app (session or API token).",
    responses={200: DEBUG_FILES_UPLOAD, **errors(404)},
)
@api_view(["GET"])
@authentication_classes([IngestKeyAuthentication, ApiTokenAuthentication, SessionAuthentication])
@permission_classes([SignedInOrIngestKey])
def api_debug_files_upload(request: Request, app_id: int, upload_id: int) -> Response:
    uploads = (
        DebugFileUpload.objects.filter(key=request.auth)
        if isinstance(request.auth, IngestKey)
        else DebugFileUpload.objects.filter(app__in=apps_for_user(request.user))
    )
    upload = get_object_or_404(uploads, app_id=app_id, pk=upload_id)
    return Response(upload.as_json(status_url(upload)))
