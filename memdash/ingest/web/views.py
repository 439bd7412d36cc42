"""The upload doors on the web: the API (ingest key auth) and the upload page (login)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.http import Http404
from django.http.multipartparser import MultiPartParserError
from django.http.response import HttpResponseBase
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods
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
    AuthenticatedHttpRequest,
    IngestKeyAuthentication,
    SignedInOrIngestKey,
    ingest_key_from_request,
)
from memdash.core.logic.errors import InvalidUpload, UploadRefused
from memdash.core.logic.reading import read_chunks, whole_body
from memdash.core.models import IngestKey
from memdash.core.reads.apps import apps_for_contributor, apps_for_user, is_app_contributor
from memdash.core.throttle import upload_quota_wait
from memdash.core.web.export import csv_response, csv_table
from memdash.core.web.http import app_or_404, declared_length
from memdash.core.web.schema import ERROR, INGEST_KEY, NONEMPTY_BINARY, error
from memdash.core.writes.apps import count_over_quota
from memdash.ingest.models import Upload
from memdash.ingest.web.exports import (
    DETAIL_HEADERS,
    UPLOAD_HEADERS,
    upload_detail_rows,
    upload_rows,
)
from memdash.ingest.web.forms import UploadForm
from memdash.ingest.web.openapi import REFUSED, UPLOAD, UPLOADED
from memdash.ingest.writes import uploads as services
from memdash.ingest.writes.formats import META_FIELDS

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser, User


def upload_response(upload: Upload, created: bool) -> Response:
    """202 while queued or done; a refused upload answers with its own status (400/403/413)."""
    body = upload.as_json()
    body["duplicate"] = not created
    if upload.status == Upload.REJECTED and upload.error_status:
        return Response(body, status=upload.error_status)
    return Response(body, status=status.HTTP_202_ACCEPTED if created else status.HTTP_200_OK)


def _body_chunks(request: Request) -> tuple[Iterable[bytes] | None, str, Mapping[str, str]]:
    """The uploaded bytes, streamed: a multipart `file` field, or the raw request body (all
    the bytes its Content-Length declares, or refused at its end; a body without a length is
    refused before any is read)."""
    django_request = request._request
    declared = declared_length(django_request.META, settings.MEMDASH_MAX_BODY_BYTES)
    content_type = django_request.META.get("CONTENT_TYPE", "")
    if content_type.startswith("multipart/form-data"):
        upload = django_request.FILES.get("file")
        if upload is None:
            return None, "", django_request.POST
        return upload.chunks(), upload.name or "", django_request.POST
    return whole_body(read_chunks(django_request), declared), "", {}


@extend_schema(
    summary="Upload a snapshot, sessions, retain cycles, a leak report or churn",
    description="Body: the document as the tool wrote it, JSON or text, sent with any "
    "Content-Type (`application/json`, `text/plain`, …; optionally `Content-Encoding: gzip`), or "
    "a multipart form with a `file` field; with workers it is answered 202 and a worker tells "
    "its format or refuses it (its `url` says why). Authenticated with "
    "`Authorization: Bearer <ingest key>`. Formats that carry no app or build take "
    "`build_version`, `build_number` … from query parameters or form fields. The same content "
    "again (however compressed) or the same `Idempotency-Key` answers the upload already made "
    "(`200`, `duplicate: true`).",
    # The door reads any body as bytes (with any Content-Type but a multipart form's): which
    # format it is, and whether it is one, the worker tells (docs/formats.md, their schemas).
    request={
        "application/octet-stream": NONEMPTY_BINARY,
        "multipart/form-data": {
            "type": "object",
            "properties": {"file": {"type": "string", "format": "binary"}},
            "required": ["file"],
        },
    },
    parameters=[
        *(OpenApiParameter(name, str, required=False) for name in META_FIELDS),
        OpenApiParameter(
            "Idempotency-Key",
            {"type": "string", "pattern": "^[ -~]{1,255}$"},
            OpenApiParameter.HEADER,
            required=False,
            description="the client's own name of this upload, 1 to 255 printable ASCII "
            "characters: sent again with the same key, the app's upload of that key answers",
        ),
    ],
    responses={
        202: OpenApiResponse(UPLOADED, description="Received: queued, or processed already."),
        200: OpenApiResponse(UPLOADED, description="The same upload as before (`duplicate`)."),
        **{status: error(status, body=REFUSED) for status in (411, 413)},
        # a parameter the API refuses before any upload is made answers `error` only
        400: error(400, "The refused upload, with why and where.", {"anyOf": [REFUSED, ERROR]}),
        403: error(403, "The key is another app's than `app` names."),
        429: error(
            429,
            "The key's uploads this minute are over its quota (counted on the key, not stored as "
            "an upload), or too many failed authentications from this address; Retry-After "
            "says how long.",
            body=ERROR,
        ),
    },
    auth=INGEST_KEY,
)
@api_view(["POST"])
@authentication_classes([])
@permission_classes([AllowAny])
@parser_classes([])
def api_upload_create(request: Request) -> Response:
    key = ingest_key_from_request(request)
    if key is None:
        return Response(
            {"error": "a valid ingest key is required: Authorization: Bearer <key>"},
            status=status.HTTP_401_UNAUTHORIZED,
            headers={"WWW-Authenticate": "Bearer"},
        )
    app = key.app
    named_app = request.query_params.get("app")
    if named_app and named_app != app.bundle_id:
        return Response(
            {"error": f"this key belongs to {app.bundle_id}, not {named_app}"},
            status=status.HTTP_403_FORBIDDEN,
        )
    refused: UploadRefused
    wait = upload_quota_wait(key.pk)
    if wait is not None:  # counted on the key, not stored: a flood makes no rows
        count_over_quota(key)
        return Response(
            {
                "error": f"this key sent more than {settings.MEMDASH_UPLOADS_PER_KEY_PER_MINUTE} "
                f"uploads this minute: send again in {wait} s"
            },
            status=status.HTTP_429_TOO_MANY_REQUESTS,
            headers={"Retry-After": str(wait)},
        )
    try:
        chunks, filename, form = _body_chunks(request)
    except UploadRefused as exc:
        return upload_response(services.record_refused(app, exc, key=key), True)
    except MultiPartParserError as exc:
        refused = InvalidUpload(f"the multipart form cannot be read: {exc}", "Content-Type")
        return upload_response(services.record_refused(app, refused, key=key), True)
    if chunks is None:
        refused = InvalidUpload("the multipart form has no `file` field", "file")
        return upload_response(services.record_refused(app, refused, key=key), True)
    fields = {**request.query_params.dict(), **{k: v for k, v in form.items()}}
    upload, created = services.receive_upload(
        app, chunks, fields=fields, key=key, source=Upload.API, filename=filename,
        client_key=request.headers.get("Idempotency-Key"),
    )  # fmt: skip
    return upload_response(upload, created)


@extend_schema(
    summary="An upload's status, error (with the JSON path) and counts",
    description="For a signed-in member of the upload's app (session or API token), or with "
    "the ingest key that sent it (`Authorization: Bearer <key>`: the URL its 202 answered); "
    "another key's upload is 404.",
    responses={200: UPLOAD},
)
@api_view(["GET"])
@authentication_classes([IngestKeyAuthentication, ApiTokenAuthentication, SessionAuthentication])
@permission_classes([SignedInOrIngestKey])
def api_upload_detail(request: Request, upload_id: int) -> Response:
    uploads = (
        Upload.objects.filter(key=request.auth)
        if isinstance(request.auth, IngestKey)
        else Upload.objects.filter(app__in=apps_for_user(request.user))
    )
    upload = get_object_or_404(uploads.select_related("app"), pk=upload_id)
    return Response(upload.as_json())


def uploads_for_user(user: User | AnonymousUser) -> QuerySet[Upload]:
    return Upload.objects.filter(app__in=apps_for_user(user)).select_related("app", "user")


@login_required
@require_http_methods(["GET", "POST"])
def upload_list(request: AuthenticatedHttpRequest, app_id: int | None = None) -> HttpResponseBase:
    app = app_or_404(request.user, app_id) if app_id else None
    may_upload = (
        is_app_contributor(request.user, app)
        if app
        else apps_for_contributor(request.user).exists()
    )
    if request.method == "POST" and not may_upload:
        raise PermissionDenied("Viewers only read: an admin of the app can make you a member.")
    form = UploadForm(request.POST or None, request.FILES or None, user=request.user, app=app)
    if request.method == "POST" and form.is_valid():
        chunks, filename = form.content()
        upload, created = services.receive_upload(
            form.cleaned_data["app"],
            chunks,
            fields=form.meta_fields(),
            user=request.user,
            source=Upload.PAGE,
            filename=filename,
        )
        if not created:
            messages.info(request, "These bytes were uploaded before: here is that upload.")
        return redirect(upload.get_absolute_url())
    uploads = uploads_for_user(request.user)
    if app is not None:
        uploads = uploads.filter(app=app)
    if csv_table(request) is not None:
        rows = upload_rows(uploads.select_related("key").iterator(chunk_size=500))
        return csv_response(f"{app.bundle_id}-uploads" if app else "uploads", UPLOAD_HEADERS, rows)
    page = Paginator(uploads, 50).get_page(request.GET.get("page"))
    context = {"form": form, "may_upload": may_upload, "page": page, "app": app}
    return render(request, "ingest/upload_list.html", context)


@login_required
def upload_detail(request: AuthenticatedHttpRequest, upload_id: int) -> HttpResponseBase:
    upload = uploads_for_user(request.user).filter(pk=upload_id).first()
    if upload is None:
        raise Http404("No such upload")
    if csv_table(request) is not None:
        rows = upload_detail_rows(upload)
        return csv_response(f"upload-{upload.pk}", DETAIL_HEADERS, rows)
    return render(request, "ingest/upload_detail.html", {"upload": upload, "app": upload.app})
