"""The docs say what the code reads: every environment variable the settings read is in the
README's configuration table."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# A variable read as os.environ.get("X") / os.environ["X"] or through env_int/env_bool/env_list.
READ = re.compile(r"""(?:environ(?:\.get)?\(?\[?|env_(?:int|bool|list)\()\s*["']([A-Z0-9_]+)["']""")


def settings_variables() -> set[str]:
    return set(READ.findall((ROOT / "memdash" / "settings.py").read_text()))


def test_the_settings_read_variables() -> None:
    # The pattern itself finds them (a dead regex would pass the test below by finding none).
    assert {"DATABASE_URL", "DEBUG", "SECRET_KEY", "MEMDASH_VAR_DIR"} <= settings_variables()


def test_every_variable_the_settings_read_is_in_the_readme() -> None:
    table = (ROOT / "README.md").read_text().split("## Configuration", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"`([A-Z0-9_]+)`", table))
    assert sorted(settings_variables() - documented) == []
