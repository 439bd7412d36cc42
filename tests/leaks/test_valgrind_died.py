"""Runs that died of a signal, through the upload API and on the report page: the signal, where,
and whether a leak check ran, never shown as "0 leaks"; valgrind's own regression-test files
refused with the reason. The files are valgrind 3.19's (tests/corpus/record_valgrind.sh, its
figures in tests/data/leaks/valgrind-3.19.recorded.txt) but for `valgrind_leak-cases-full
.stderr.exp`, valgrind's own test data (tests/data/PROVENANCE.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memdash.core.logic.errors import InvalidUpload
from memdash.ingest.models import Upload
from memdash.leaks.logic.parsers.valgrind import int_of, parse_xml_safely
from memdash.leaks.models import LeakRecord, LeakReport

SAMPLES = Path(__file__).resolve().parents[1] / "data" / "leaks"


def send(upload, name: str):
    return upload(
        (SAMPLES / name).read_bytes(), content_type="text/plain", query="build_version=1.0"
    )


@pytest.mark.django_db
def test_a_run_without_a_leak_check_is_stored_and_shown_as_such(upload, app, member_client):
    response = send(upload, "valgrind-3.19_crash_no_leak_check.txt")
    assert response.status_code == 202 and response.json()["status"] == "done", response.json()
    report = LeakReport.objects.get(app=app)
    assert report.no_leak_check and report.stated_bytes is None
    assert report.fatal_signal["name"] == "SIGSEGV"
    page = member_client.get(report.get_absolute_url()).content.decode()
    # "==22492== Process terminating with default action of signal 11 (SIGSEGV)"
    # "==22492==  Access not within mapped region at address 0x0"
    assert (
        "The process died of signal 11 (SIGSEGV): Access not within mapped region at "
        "address 0x0." in page
    )
    assert "No leak check ran" in page and "unknown, not 0" in page
    assert "<li>write_through crash.c:27</li>" in page
    assert 'id="heap-summary"' in page and "3,200 allocs, 0 frees" in page


@pytest.mark.django_db
def test_a_run_that_died_after_its_leak_check_shows_both(upload, app, member_client):
    response = send(upload, "valgrind-3.19_crash.txt")
    assert response.status_code == 202, response.json()
    report = LeakReport.objects.get(app=app)
    # "definitely lost: 60,000 bytes in 1,200 blocks"
    assert (report.stated_bytes, report.stated_allocations) == (60_000, 1_200)
    page = member_client.get(report.get_absolute_url()).content.decode()
    assert "The process died of signal 11 (SIGSEGV)" in page
    assert "valgrind ran its leak check as the process died" in page
    assert "No leak check ran" not in page


@pytest.mark.django_db
def test_an_xml_run_that_died_listing_nothing_says_so(upload, app, member_client):
    response = send(upload, "valgrind-3.19_crash_kept_protocol4.xml")
    assert response.status_code == 202, response.json()
    assert response.json()["format"] == "valgrind.memcheck-xml"
    report = LeakReport.objects.get(app=app)
    assert report.nothing_listed and not LeakRecord.objects.exists()
    page = member_client.get(report.get_absolute_url()).content.decode()
    assert "The process died of signal 11 (SIGSEGV)" in page
    assert 'id="nothing-listed"' in page and "lists no loss record" in page


@pytest.mark.django_db
def test_valgrinds_regression_test_files_are_refused_with_the_reason(upload, app):
    response = send(upload, "valgrind_leak-cases-full.stderr.exp")
    assert response.status_code == 400
    body = response.json()
    assert (
        "regression-test expected output" in body["error"]
        and "loss record ... of ..." in (body["error"])
    )
    assert body["path"] == "line 6"  # "16 bytes in 1 blocks are possibly lost in loss record ..."
    assert Upload.objects.get(pk=body["id"]).status == "rejected"
    assert not LeakReport.objects.exists()


@pytest.mark.parametrize(
    ("text", "value"), [("64146", 64146), ("64,146", 64146), ("1,234,567", 1234567), ("0", 0)]
)
def test_xml_counts_read_with_or_without_thousands_separators(text, value):
    """Protocol 6's <heap_summary> and <leak_summary> print `<bytes>64,146</bytes>` (issue 30;
    valgrind 3.19 here writes protocol 4, whose counts have none: its <text> has them, read by
    the recorded files' tests)."""
    element = parse_xml_safely(f"<heap_summary><bytes>{text}</bytes></heap_summary>".encode())
    assert int_of(element, "bytes", "heap_summary") == value


@pytest.mark.parametrize("text", ["6,41,46", "64,1460", ",146", "64,", "-1", "1e3"])
def test_xml_counts_that_are_no_count_are_refused(text):
    element = parse_xml_safely(f"<heap_summary><bytes>{text}</bytes></heap_summary>".encode())
    with pytest.raises(InvalidUpload, match="expected a count below 2\\^63"):
        int_of(element, "bytes", "heap_summary")
