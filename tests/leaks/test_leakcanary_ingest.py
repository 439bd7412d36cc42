"""LeakCanary's analyses through the upload doors: one cluster per signature across devices and
builds, library leaks apart (hidden unless asked), retained bytes and objects per occurrence,
the same triage as retain cycles (a fix seen again in a later build reopens it), the pages and
the API, refusals that store nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from memdash.core.models import Build
from memdash.core.writes import apps as core_services
from memdash.ingest.models import Upload
from memdash.leaks.models import LeakTraceAnalysis, LeakTraceCluster, LeakTraceOccurrence
from memdash.triage.models import Status

pytestmark = pytest.mark.django_db

SAMPLES = Path(__file__).resolve().parents[1] / "data" / "leakcanary"


@pytest.fixture
def android(db):
    return core_services.get_or_create_app("com.example.chat", "android", "Chat for Android")


@pytest.fixture
def android_secret(android):
    return core_services.create_ingest_key(android)[1]


@pytest.fixture
def android_member(android, member):
    core_services.add_member(android, member)
    return member


def send(upload, secret, name: str, build: str = "8.0.3", device: str = "A-1"):
    body = (SAMPLES / name).read_bytes()
    query = f"build_version={build}&build_number=1&device_id={device}"
    return upload(body, secret=secret, content_type="text/plain", query=query)


def done(response) -> dict:
    body = response.json()
    assert response.status_code == 202 and body["status"] == "done", body
    return body


def test_an_analysis_is_stored_with_its_leaks(upload, android, android_secret):
    body = done(send(upload, android_secret, "MultiApplicationLeak.txt"))
    assert body["format"] == "leakcanary"
    assert body["counts"] == {
        "analyses": 1, "leaks": 2, "clusters": 2, "new_clusters": 2, "library_leaks": 0,
        "reopened": 0, "failed_analyses": 0,
    }  # fmt: skip
    analysis = LeakTraceAnalysis.objects.get()
    assert analysis.leakcanary_version == "2.11"
    assert analysis.process == "com.amaze.filemanager.debug"
    assert (analysis.application_leaks, analysis.library_leaks) == (2, 0)
    # `Heap dump timestamp: 1710721509247` (ms)
    assert analysis.captured_at.isoformat() == "2024-03-18T00:25:09.247000+00:00"
    tab = LeakTraceCluster.objects.get(signature="2d8918c3076020f19fa7ab4b6ca5cb4423772b20")
    assert (tab.title, tab.retained_bytes, tab.traces) == (
        "ConstraintLayout via TabFragment.rootView",
        8928,
        4,
    )
    occurrence = LeakTraceOccurrence.objects.get(cluster=tab)
    # `8928 bytes retained by leaking objects`, its leaking object `Retaining 2.2 kB in 43 objects`
    assert (occurrence.retained_bytes, occurrence.retained_objects) == (8928, 43)
    assert [row["verdict"] for row in tab.trace][-1] == "YES"
    assert [row.get("suspect", False) for row in tab.trace].count(True) == 1


def test_equal_signatures_land_together_across_devices_and_builds(upload, android, android_secret):
    done(send(upload, android_secret, "MultiApplicationLeak.txt", "8.0.3", "A-1"))
    done(send(upload, android_secret, "MultiApplicationLeak.txt", "8.0.4", "A-2"))
    assert LeakTraceCluster.objects.count() == 2
    tab = LeakTraceCluster.objects.get(signature="2d8918c3076020f19fa7ab4b6ca5cb4423772b20")
    assert (tab.occurrences, tab.devices, tab.builds, tab.traces) == (2, 2, 2, 8)
    assert tab.retained_bytes == 2 * 8928
    assert str(tab.first_seen_build) == "8.0.3 (1)" and str(tab.last_seen_build) == "8.0.4 (1)"


def test_library_leaks_apart_and_hidden_unless_asked(
    upload, android, android_secret, android_member, client
):
    done(send(upload, android_secret, "handwritten_logcat_app_and_library.txt"))
    library = LeakTraceCluster.objects.get(library=True)
    assert library.pattern == "instance field android.app.Activity$1#this$0"
    client.force_login(android_member)
    listed = client.get(f"/apps/{android.pk}/leaks/leakcanary/").content.decode()
    assert "ChatActivity via static ChatRepository.listeners" in listed
    assert "SettingsActivity via Activity$1.this$0" not in listed
    assert "library leaks (1)" in listed
    shown = client.get(f"/apps/{android.pk}/leaks/leakcanary/?library=1").content.decode()
    assert "SettingsActivity via Activity$1.this$0" in shown and 'class="library"' in shown


def test_the_same_triage_as_retain_cycles(upload, android, android_secret, android_member):
    done(send(upload, android_secret, "SingleApplicationLeakAnalyzeCmd.txt", "8.0.3"))
    cluster = LeakTraceCluster.objects.get()
    fix = core_services.get_or_create_build(android, "8.0.4", "1")
    cluster.change_triage(android_member, status=Status.FIXED, fixed_in_build=fix)
    # seen again in a later build than its fix: reopened as a regression
    body = done(send(upload, android_secret, "SingleApplicationLeakAnalyzeCmd.txt", "8.0.5"))
    assert body["counts"]["reopened"] == 1
    cluster.refresh_from_db()
    assert (cluster.status, cluster.regression) == (Status.OPEN, True)


def test_the_pages_draw_the_trace(upload, android, android_secret, android_member, client):
    done(send(upload, android_secret, "SingleApplicationLeakAnalyzeCmd.txt"))
    cluster = LeakTraceCluster.objects.get()
    client.force_login(android_member)
    page = client.get(cluster.get_absolute_url()).content.decode()
    assert page.count('data-suspect="1"') == 2  # FragmentHostActivity.fragments, Fragment[0]
    assert "✂ Fragment[0]" in page and 'class="verdict-YES"' in page
    assert "GC root: Input or output parameters in native code" in page
    assert "Retaining 2.1 kB" not in page and "2.1 kB in 69 objects" in page
    assert 'id="triage"' in page
    analysis = LeakTraceAnalysis.objects.get()
    page = client.get(analysis.get_absolute_url()).content.decode()
    assert "LeakCanary 2.11" in page and "1716181171176" in page
    response = client.get(f"/apps/{android.pk}/leaks/leakcanary/?format=csv")
    csv = b"".join(response.streaming_content).decode()
    assert csv.splitlines()[1].split(",")[2] == "442f3a7295abb8db4c32672ff17a43941effe5d0"


def test_the_api_and_its_triage_patch(upload, android, android_secret, android_member, client):
    done(send(upload, android_secret, "handwritten_logcat_app_and_library.txt"))
    client.force_login(android_member)
    listed = client.get(f"/api/v1/apps/{android.pk}/leakcanary").json()
    titles = [c["title"] for c in listed["clusters"]]
    assert titles == ["ChatActivity via static ChatRepository.listeners"]
    both = client.get(f"/api/v1/apps/{android.pk}/leakcanary?include_library=true").json()
    assert {c["library"] for c in both["clusters"]} == {True, False}
    wrong = client.get(f"/api/v1/apps/{android.pk}/leakcanary?include_library=AAA")
    assert wrong.status_code == 400 and "include_library" in wrong.json()["fields"]
    cluster = LeakTraceCluster.objects.get(library=False)
    url = f"/api/v1/leakcanary/{cluster.pk}"
    detail = client.get(url).json()
    assert detail["gc_root"] == "System class" and detail["retained_bytes"] == 36812
    assert detail["latest_occurrences"][0]["retained_objects"] == 611
    build = Build.objects.get(app=android)
    # the analysis's build still has the leak: "fixed in" it is refused
    refused = client.patch(
        url, {"status": "fixed", "fixed_in_build": build.pk}, content_type="application/json"
    )
    assert refused.status_code == 409 and refused.json()["path"] == "fixed_in_build"
    later = core_services.get_or_create_build(android, "8.0.4", "2")
    patched = client.patch(
        url, {"status": "fixed", "fixed_in_build": later.pk}, content_type="application/json"
    )
    assert patched.status_code == 200 and patched.json()["status"] == "fixed"
    bad = client.patch(url, {"status": "done"}, content_type="application/json")
    assert bad.status_code == 400


def test_refusals_store_nothing(upload, app, ingest_secret, android, android_secret):
    # an iOS app's key: LeakCanary runs on Android
    ios = send(upload, ingest_secret, "MultiApplicationLeak.txt")
    assert ios.status_code == 403
    cut = (SAMPLES / "SingleApplicationLeakAnalyzeCmd.txt").read_text().splitlines()[:36]
    response = upload(
        "\n".join(cut).encode(), secret=android_secret, content_type="text/plain",
        query="build_version=8.0.3",
    )  # fmt: skip
    assert response.status_code == 400 and response.json()["path"] == "line 36"
    no_build = upload(
        (SAMPLES / "ServiceLeak.txt").read_bytes(), secret=android_secret,
        content_type="text/plain",
    )  # fmt: skip
    assert no_build.status_code == 400 and no_build.json()["path"] == "build_version"
    assert not LeakTraceAnalysis.objects.exists() and not LeakTraceCluster.objects.exists()
    assert set(Upload.objects.values_list("status", flat=True)) == {Upload.REJECTED}
