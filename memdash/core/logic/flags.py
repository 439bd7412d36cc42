"""Yes/no flags from text that people type: environment variables and query parameters (pure:
no Django, so settings.py can read its own switches with it)."""

from __future__ import annotations

YES = frozenset({"1", "true", "yes", "on"})
NO = frozenset({"", "0", "false", "no", "off"})  # an empty value says no


def read_flag(text: str | None, default: bool) -> bool | None:
    """True for 1/true/yes/on, False for 0/false/no/off or an empty value (`DEBUG=`,
    `?inverted=`), in any case and with blanks around; `default` when absent (None); None for
    any other text, which the caller refuses or overlooks as its own contract says."""
    if text is None:
        return default
    word = text.strip().lower()
    if word in YES:
        return True
    if word in NO:
        return False
    return None
