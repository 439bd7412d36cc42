"""Upload errors live in core (domains raise them while validating); re-exported for ingest."""

from memdash.core.errors import InvalidUpload, TooLarge, UploadRefused, WrongApp

__all__ = ["InvalidUpload", "TooLarge", "UploadRefused", "WrongApp"]
