"""Yes/no words: one reader (core.flags) for settings, query parameters and the API."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.http import QueryDict
from rest_framework.exceptions import ValidationError

from memdash.core.logic.flags import read_flag
from memdash.core.web.api import parse_flag

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("text", ["1", "true", "TRUE", "Yes", "on", " on "])
def test_yes_words(text):
    assert read_flag(text, default=False) is True


@pytest.mark.parametrize("text", ["0", "false", "No", "OFF", "", "  "])
def test_no_words_and_an_empty_value(text):
    assert read_flag(text, default=True) is False


def test_absent_is_the_default():
    assert read_flag(None, default=True) is True
    assert read_flag(None, default=False) is False


@pytest.mark.parametrize("text", ["2", "maybe", "tru", "yes please"])
def test_any_other_word_is_left_to_the_caller(text):
    assert read_flag(text, default=True) is None


def test_a_query_parameter_that_is_no_flag_is_refused_by_name():
    assert parse_flag(QueryDict("inverted=1"), "inverted") is True
    assert parse_flag(QueryDict("inverted="), "inverted", default=True) is False
    assert parse_flag(QueryDict(""), "inverted", default=True) is True
    with pytest.raises(ValidationError) as refused:
        parse_flag(QueryDict("inverted=maybe"), "inverted")
    assert refused.value.detail == {"inverted": "must be 1 or 0 (true/false)"}


def _settings_with(show: str = "DEBUG", **env: str) -> subprocess.CompletedProcess:
    """memdash.settings imported in a fresh interpreter with these variables; prints `show`."""
    return subprocess.run(
        [sys.executable, "-c", f"import memdash.settings as s; print(s.{show})"],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=False,
    )


def test_settings_read_their_switches_with_it():
    assert _settings_with(DEBUG="off", SECRET_KEY="k" * 50).stdout.strip() == "False"
    assert _settings_with(DEBUG="Yes").stdout.strip() == "True"


def test_collected_static_files_are_a_switch_like_the_others():
    # Under DEBUG the sources are served unless the switch says yes, in any of its spellings.
    for word, collected in [("1", "True"), ("yes", "True"), ("On", "True"), ("0", "False")]:
        result = _settings_with("COLLECTED_STATIC", DEBUG="1", MEMDASH_COLLECTED_STATIC=word)
        assert result.stdout.strip() == collected, word
    env = {k: v for k, v in os.environ.items() if k != "MEMDASH_COLLECTED_STATIC"}
    unset = subprocess.run(
        [sys.executable, "-c", "import memdash.settings as s; print(s.COLLECTED_STATIC)"],
        cwd=ROOT, env={**env, "DEBUG": "1"}, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert unset.stdout.strip() == "False"
    refused = _settings_with("COLLECTED_STATIC", DEBUG="1", MEMDASH_COLLECTED_STATIC="ja")
    assert "MEMDASH_COLLECTED_STATIC must be 1 or 0" in refused.stderr


def test_a_mistyped_switch_stops_the_start():
    result = _settings_with(DEBUG="flase")
    assert result.returncode != 0
    assert "DEBUG must be 1 or 0 (true/false, yes/no, on/off)" in result.stderr
