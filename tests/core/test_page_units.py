"""Pages print bytes in binary units through the `bytes` filter (never Django's decimal-ish
filesizeformat: "7.3 KB", "780 bytes"), times with their zone and durations as people read them
(never a raw "ms" column): the pages about names, churn and the snapshot diff's pickers."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.churn.test_churn_ingest import BUILD_1, BUILD_2
from tests.compare.helpers import SNAPSHOT_A_ROWS, SNAPSHOT_B_ROWS, document, store
from tests.symbols.documents import by_address
from tests.symbols.helpers import ELF
from tests.symbols.test_symbolication import post_debug_file, stored

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
DECIMAL_UNITS = re.compile(r"\d(?:\s|&nbsp;|\xa0)*(?:KB|MB|GB|bytes?)\b")


def no_decimal_units(html: str) -> None:
    assert not DECIMAL_UNITS.search(html), DECIMAL_UNITS.search(html)


def test_no_template_uses_filesizeformat_or_a_time_without_its_zone():
    templates = [*(ROOT / "memdash").rglob("*.html"), *(ROOT / "templates").rglob("*.html")]
    assert len(templates) > 40
    for path in templates:
        text = path.read_text()
        assert "filesizeformat" not in text, path
        for fmt in re.findall(r'\|date:"([^"]*)"', text):
            assert "H" not in fmt or fmt.endswith(" T"), (path, fmt)  # a time says its zone


def test_the_pages_about_names(
    client, member_client, app, ingest_secret, upload, django_capture_on_commit_callbacks
):
    snapshot = stored(upload, by_address())
    page = member_client.get(snapshot.get_absolute_url()).content.decode()
    # 704 bytes on stacks through unnamed frames (tests/symbols/test_pages.py): under 1 KiB
    assert "Some frames have no name (704 Bytes under them)" in page
    missing = member_client.get(f"/snapshots/{snapshot.pk}/symbols/").content.decode()
    assert '<td class="num">704 Bytes</td>' in missing
    no_decimal_units(page)
    no_decimal_units(missing)
    post_debug_file(client, app, ingest_secret, ELF, django_capture_on_commit_callbacks)
    files = member_client.get(f"/apps/{app.pk}/debug-files/").content.decode()
    size = ELF.stat().st_size  # 19,088 bytes / 1024 = 18.64 KiB
    assert size == 19_088 and '<td class="num">18.64 KiB</td>' in files
    assert re.search(r"<td>\d{4}-\d\d-\d\d \d\d:\d\d UTC", files)  # uploaded, with its zone
    no_decimal_units(files)


def test_churn_times_are_durations(member_client, app, upload):
    for doc in (BUILD_1, BUILD_2):
        assert upload(doc).json()["status"] == "done"
    page = member_client.get(f"/apps/{app.pk}/churn/").content.decode()
    assert "Elapsed ms" not in page
    # "open" in 1.0: elapsed 100, 140, 90 ms — median 100 ms, range 90 ms to 140 ms
    assert '<td class="num">100 ms</td>' in page
    assert '<td class="num">90 ms – 140 ms</td>' in page


def test_the_snapshot_pickers_say_the_zone(member_client, app, upload):
    a = store(upload, document(SNAPSHOT_A_ROWS))
    b = store(upload, document(SNAPSHOT_B_ROWS, version="2.0", number="2", device="D-2"))
    page = member_client.get(f"/apps/{app.pk}/snapshot-diff/?base={a}&target={b}")
    assert "· 2026-11-20 10:00 UTC</option>" in page.content.decode()
