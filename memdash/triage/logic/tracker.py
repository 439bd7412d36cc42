"""A tracker's "new issue" link for a triaged item: its template filled with the item's values."""

from __future__ import annotations

import re
from collections.abc import Mapping
from urllib.parse import quote

# A tracker issue's address as the triage keeps it: http(s), no blank (empty: none). The API's
# schema, the form and the model's check all read this one pattern.
TRACKER_URL_PATTERN = (
    r"^(?:https?://[^\x00-\x20\x7f-\xa0]+)?$"  # explicit ranges: JS's \s is not Python's
)
TRACKER_URL_MAX = 2000


def is_tracker_url(text: str) -> bool:
    return len(text) <= TRACKER_URL_MAX and re.fullmatch(TRACKER_URL_PATTERN, text) is not None


PLACEHOLDER = re.compile(r"\{(title|body|build|count|url)\}")
PLACEHOLDERS = ("title", "body", "build", "count", "url")


def filled(template: str, values: Mapping[str, str]) -> str:
    """`template` with each `{name}` replaced by its value, URL-encoded (unknown braces kept)."""
    return PLACEHOLDER.sub(lambda m: quote(values.get(m.group(1), ""), safe=""), template)


def issue_body(title: str, first: str, last: str, count: str, url: str) -> str:
    """The prefilled description: what it is, where it was seen, how often, and the way back."""
    seen = f"First seen in {first}, last seen in {last}." if first else ""
    counted = f" {count} occurrences." if count else ""
    return f"{title}\n\n{seen}{counted}\n\nIn memdash: {url}\n"
