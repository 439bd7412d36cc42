"""The platforms' own leak tools through every door: the API (format detected from the content),
the upload page (a file, or the text pasted), the `import_snapshot` command. Each door stores the
same: the same format, the same counts (but for what was new to the app)."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command

from memdash.core.writes import apps as core_services
from memdash.ingest.models import Upload

pytestmark = pytest.mark.django_db

DATA = Path(__file__).resolve().parents[1] / "data"
SAMPLES = {
    "xcode.leaks": ("", DATA / "xcode-leaks" / "handwritten_stacks_and_cycles.txt"),
    "leakcanary": ("com.example.chat", DATA / "leakcanary" / "MultiApplicationLeak.txt"),
    "android.exitinfo.text": (
        "com.example.otel_zone_example",
        DATA / "exitinfo" / "dumpsys_exit_info_api34.txt",
    ),
}
DOORS = ("api", "page file", "page paste", "command")


def stable(counts: dict) -> dict:
    """The counts a second door gives alike: what was new or reopened depends on the order (an
    exit already stored is `unchanged` the second time, not `created`)."""
    order_bound = ("new", "reopened", "created", "unchanged")
    return {k: v for k, v in counts.items() if not k.startswith(order_bound)}


def through(door: str, app, secret: str, member_client, client, path: Path, device: str):
    body = path.read_bytes()
    fields = {"build_version": "8.0.4", "build_number": "104", "device_id": device}
    if door == "api":
        query = "&".join(f"{k}={v}" for k, v in fields.items())
        response = client.post(
            f"/api/v1/uploads?{query}", data=body, content_type="text/plain",
            HTTP_AUTHORIZATION=f"Bearer {secret}",
        )  # fmt: skip
        assert response.status_code == 202, response.content
    elif door == "page file":
        response = member_client.post(
            "/uploads/", {"app": app.pk, "file": SimpleUploadedFile("report.txt", body), **fields}
        )
        assert response.status_code == 302
    elif door == "page paste":
        response = member_client.post(
            "/uploads/", {"app": app.pk, "pasted": body.decode(), **fields}
        )
        assert response.status_code == 302
    else:
        out = StringIO()
        call_command(
            "import_snapshot", str(path), "--key", secret,
            "--build-version", "8.0.4", "--build-number", "104", "--device-id", device,
            stdout=out, stderr=StringIO(),
        )  # fmt: skip
        assert "imported as" in out.getvalue()
    return Upload.objects.filter(app=app).latest("pk")


@pytest.mark.parametrize("fmt", SAMPLES)
def test_every_door_stores_the_same(fmt, app, member, client, tmp_path):
    bundle, sample = SAMPLES[fmt]  # an Android app's bundle id; the iOS test app else
    target = core_services.get_or_create_app(bundle, "android", bundle) if bundle else app
    core_services.add_member(target, member)
    secret = core_services.create_ingest_key(target)[1]
    path = tmp_path / sample.name
    path.write_bytes(sample.read_bytes())
    member_client = client.__class__()
    member_client.force_login(member)

    results = {}
    for n, door in enumerate(DOORS):
        upload = through(door, target, secret, member_client, client, path, f"D-{n}")
        assert (upload.status, upload.format) == (Upload.DONE, fmt), (door, upload.error)
        results[door] = stable(upload.counts)
    assert all(counts == results["api"] for counts in results.values()), results
    assert Upload.objects.filter(app=target, status=Upload.DONE).count() == len(DOORS)
