"""Why an upload is refused. Each carries the HTTP status the upload API answers with."""

from __future__ import annotations


class UploadRefused(Exception):
    status = 400

    def __init__(self, message: str, path: str = ""):
        super().__init__(message)
        self.message = message
        self.path = path

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class InvalidUpload(UploadRefused):
    """The content breaks its format; `path` is the JSON path (or `line N`) of the first offence,
    for example `allocations[1203].stack`."""


class TooLarge(UploadRefused):
    status = 413


class LengthRequired(UploadRefused):
    """A body without a Content-Length (chunked): memdash takes whole bodies of a known size."""

    status = 411


class WrongApp(UploadRefused):
    """The upload names another app than its ingest key's."""

    status = 403


class OverQuota(UploadRefused):
    """The ingest key sent more uploads this minute than its quota; `retry_after` seconds until
    the minute ends."""

    status = 429

    def __init__(self, message: str, retry_after: int):
        super().__init__(message)
        self.retry_after = retry_after
