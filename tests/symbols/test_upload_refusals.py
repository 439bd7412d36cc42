"""The debug-file door: what it accepts, and a clear 4xx with what was wrong and nothing stored
for everything else."""

from __future__ import annotations

import io
import zipfile
from urllib.parse import urlencode

import pytest
from django.core.management import CommandError, call_command

from memdash.core.logic.errors import TooLarge
from memdash.core.writes import apps as core_services
from memdash.symbols.models import DebugFile, DebugFileUpload, SymbolicationJob
from memdash.symbols.writes import receive_debug_files
from tests.symbols.helpers import BREAKPAD, DSYM_ZIP, ELF, MACHO_OBJECT


def post(client, app, secret, body: bytes, name: str = "upload.bin", **extra):
    return client.post(
        f"/api/v1/apps/{app.pk}/debug-files?filename={name}",
        data=body,
        content_type="application/octet-stream",
        HTTP_AUTHORIZATION=f"Bearer {secret}",
        **extra,
    )


def zipped(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def refused(response, status: int, *words: str) -> None:
    assert response.status_code == status, response.content
    message = response.json()["error"]
    for word in words:
        assert word in message, message
    assert not DebugFile.objects.exists()
    assert not SymbolicationJob.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    "body,found",
    [
        (b'{"format": "memdash.snapshot"}', "a JSON document"),
        (b"\x89PNG\r\n\x1a\n" + bytes(40), "a PNG image"),
        (b"hello debug files\n", "text starting with 'hello debug files'"),
    ],
)
def test_not_a_debug_file_says_what_was_found(client, app, ingest_secret, body, found):
    refused(post(client, app, ingest_secret, body), 400, "not a debug file", found)


@pytest.mark.django_db
def test_an_empty_body_is_refused_at_the_door(client, app, ingest_secret):
    response = post(client, app, ingest_secret, b"")
    refused(response, 400, "the body is empty")
    assert response.json()["path"] == "body"
    assert not DebugFileUpload.objects.exists()  # nothing stored, nothing for a worker


@pytest.mark.django_db
def test_an_archive_with_no_object(client, app, ingest_secret):
    body = zipped({"Chat.app.dSYM/Contents/Info.plist": b"<?xml version='1.0'?><plist/>"})
    refused(post(client, app, ingest_secret, body, "Chat.dSYM.zip"), 400, "no Mach-O, ELF")


@pytest.mark.django_db
def test_a_truncated_object(client, app, ingest_secret):
    body = ELF.read_bytes()[:5000]
    refused(
        post(client, app, ingest_secret, body, "chat_cache.elf"), 400, "corrupt or truncated ELF"
    )


@pytest.mark.django_db
def test_a_truncated_fat_dsym_stores_neither_architecture(client, app, ingest_secret):
    with zipfile.ZipFile(DSYM_ZIP) as archive:
        name = next(n for n in archive.namelist() if "/DWARF/" in n and not n.endswith("/"))
        data = archive.read(name)
    body = zipped({name: data[: len(data) - 4000]})
    refused(post(client, app, ingest_secret, body, "x.zip"), 400, "corrupt or truncated Mach-O")


@pytest.mark.django_db
def test_a_zip_bomb_stops_at_the_limit(client, app, ingest_secret, settings, tmp_path):
    settings.MEMDASH_MAX_DEBUG_UNPACKED_BYTES = 1024 * 1024
    body = zipped({"bomb": bytes(64 * 1024 * 1024)})  # 64 MiB of zeros in about 64 KiB
    assert len(body) < 100_000
    answer = post(client, app, ingest_secret, body, "bomb.zip")
    refused(answer, 413, "unpacks to more than", "its directory declares 67,108,864")
    assert answer.json()["path"] == "zip"  # told by the directory, before anything was written
    assert not list((settings.MEDIA_ROOT / "debug-files" / "tmp").glob("*"))


@pytest.mark.django_db
def test_a_zip_that_lies_about_its_sizes_stops_while_writing(client, app, ingest_secret, settings):
    """A member that declares 1 KiB and inflates to 64 MiB: its directory passes; the reading
    stops at the size it declared (zipfile reads no more), and the member is refused as corrupt
    (its checksum is the 64 MiB's); what is written is counted besides, against the limit."""
    settings.MEMDASH_MAX_DEBUG_UNPACKED_BYTES = 1024 * 1024
    body = bytearray(zipped({"bomb": bytes(64 * 1024 * 1024)}))
    declared = (64 * 1024 * 1024).to_bytes(4, "little")
    for at in (i for i in range(len(body) - 4) if body[i : i + 4] == declared):
        body[at : at + 4] = (1024).to_bytes(4, "little")  # local header and directory alike
    refused(post(client, app, ingest_secret, bytes(body), "bomb.zip"), 400, "cannot be read")


@pytest.mark.django_db
def test_a_zip_of_too_many_members_is_refused_from_its_directory(
    client, app, ingest_secret, settings
):
    settings.MEMDASH_MAX_DEBUG_ZIP_MEMBERS = 100
    body = zipped({f"empty/{n}": b"" for n in range(101)})
    answer = post(client, app, ingest_secret, body, "many.zip")
    refused(answer, 413, "101 members, more than the 100 allowed")


@pytest.mark.django_db
@pytest.mark.parametrize(
    "name,status,kept",
    [
        ("..", 202, ""),  # names no file: kept as none
        (".", 202, ""),
        ("a/b/..", 202, ""),
        ("x" * 3000, 400, None),
        ("folder/" * 40 + "Chat.sym", 400, None),  # 287 characters: the schema's limit is 255
        ("bad\x01name", 400, None),
        ("some/folder/Chat.sym", 202, "Chat.sym"),
        ("../../etc/Chat.sym", 202, "Chat.sym"),
        ("C:\\builds\\Chat.sym", 202, "Chat.sym"),
        ("", 202, ""),
    ],
)
def test_every_filename_is_kept_as_a_name_or_refused_with_a_400_as_the_schema_says(
    client, app, ingest_secret, name, status, kept
):
    answer = client.post(
        f"/api/v1/apps/{app.pk}/debug-files",
        data=BREAKPAD.read_bytes(),
        content_type="application/octet-stream",
        HTTP_AUTHORIZATION=f"Bearer {ingest_secret}",
        QUERY_STRING=urlencode({"filename": name}),
    )
    assert answer.status_code == status, answer.content
    if status == 400:
        assert answer.json()["path"] == "filename"
        assert not DebugFileUpload.objects.exists()
    else:
        assert (answer.json()["status"], answer.json()["filename"]) == ("done", kept)


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["../escape.sym", "/etc/escape.sym", "a/../../escape.sym"])
def test_a_zip_member_leaving_the_archive(client, app, ingest_secret, name):
    body = zipped({name: b"MODULE Linux x86_64 0 x\n"})
    refused(post(client, app, ingest_secret, body, "x.zip"), 400, "points outside the archive")


@pytest.mark.django_db
def test_an_object_file_is_refused_for_its_missing_uuid(client, app, ingest_secret, capsys):
    """`clang -target arm64-apple-macos -c` writes no LC_UUID (the linker does): nothing on a
    device can name it, so it is refused, saying so and what to upload instead, over HTTP and
    from the command line."""
    response = post(client, app, ingest_secret, MACHO_OBJECT.read_bytes(), MACHO_OBJECT.name)
    words = ("chat_cache.arm64.o is an object file (arm64", "an object file has no UUID",
             "Upload the linked binary or its dSYM")  # fmt: skip
    refused(response, 400, *words)
    assert response.json()["path"] == "chat_cache.arm64.o"
    with pytest.raises(CommandError, match="1 of 1 paths were not uploaded"):
        call_command("upload_debug_files", str(MACHO_OBJECT), "--app", app.bundle_id)
    err = capsys.readouterr().err
    assert all(word in err for word in words), err
    assert not DebugFile.objects.exists()


@pytest.mark.django_db
def test_a_body_over_the_limit_is_413_before_and_while_reading(
    client, app, ingest_secret, settings
):
    settings.MEMDASH_MAX_DEBUG_FILE_BYTES = 10_000
    refused(post(client, app, ingest_secret, ELF.read_bytes()), 413, "larger than the limit")
    # Without a Content-Length (chunked), the cap is met while the stream is read.
    chunks = iter([b"\x7fELF" + bytes(4092)] * 100)
    with pytest.raises(TooLarge):
        receive_debug_files(app, chunks, filename="big.elf")
    assert next(chunks, None) is not None  # it stopped reading at the limit
    assert not DebugFile.objects.exists() and not DebugFileUpload.objects.exists()


@pytest.mark.django_db
def test_a_chunked_body_is_refused_for_its_missing_length(client, app, ingest_secret):
    """A chunked body (no Content-Length, `Transfer-Encoding: chunked`, as `curl -T -` sends a
    pipe) is refused with 411 saying so, not read as an empty file."""
    response = post(client, app, ingest_secret, ELF.read_bytes(), "chat_cache.elf",
                    CONTENT_LENGTH="", HTTP_TRANSFER_ENCODING="chunked")  # fmt: skip
    refused(response, 411, "chunked body has no length", "Content-Length")
    assert response.json()["path"] == "Content-Length"


@pytest.mark.django_db
def test_another_apps_key_and_no_key(client, app, ingest_secret):
    other = core_services.get_or_create_app("com.example.other", "ios", "Other")
    other_secret = core_services.create_ingest_key(other)[1]
    refused(post(client, app, other_secret, ELF.read_bytes()), 403, "com.example.other")
    response = client.post(f"/api/v1/apps/{app.pk}/debug-files", data=b"x",
                           content_type="application/octet-stream")  # fmt: skip
    assert response.status_code == 401


@pytest.mark.django_db
def test_a_fat_dsym_zip_by_multipart_keeps_one_object_per_architecture(
    client, app, ingest_secret, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            f"/api/v1/apps/{app.pk}/debug-files",
            {"file": io.BytesIO(DSYM_ZIP.read_bytes())},
            HTTP_AUTHORIZATION=f"Bearer {ingest_secret}",
        )
    assert response.status_code == 202, response.json()
    assert response.json()["status"] == "done"  # the embedded default: processed in the request
    objects = {o["arch"]: o for o in response.json()["objects"]}
    assert sorted(objects) == ["arm64", "x86_64"]
    assert {o["kind"] for o in objects.values()} == {"dsym"}
    assert objects["arm64"]["debug_id"] == "4c4c447e-5555-3144-a181-4347f75e0997"
    # Both slices are in the one DWARF file: kept once.
    assert len({o["sha256"] for o in objects.values()}) == 1
    # An image no stored frame uses is accepted (and listed): the job named nothing.
    assert response.json()["symbolication"]["frames_named"] == 0


@pytest.mark.django_db
def test_the_command_takes_a_dsym_folder(app, tmp_path, capsys, django_capture_on_commit_callbacks):
    with zipfile.ZipFile(DSYM_ZIP) as archive:
        archive.extractall(tmp_path)
    with django_capture_on_commit_callbacks(execute=True):
        call_command("upload_debug_files", str(tmp_path / "libchat_cache.dylib.dSYM"),
                     "--app", app.bundle_id)  # fmt: skip
    out = capsys.readouterr().out
    assert "libchat_cache.dylib arm64 4c4c447e-5555-3144-a181-4347f75e0997 (dsym): stored" in out
    assert "libchat_cache.dylib x86_64" in out
    assert DebugFile.objects.filter(app=app).count() == 2


@pytest.mark.django_db
def test_the_command_shows_each_step_of_a_dsym_zip(app, capsys, django_capture_on_commit_callbacks):
    """In a log (not a terminal) a line per step. The zip (3,850 bytes) is read where it is;
    its 6 members (4 folders, Info.plist, the DWARF file) are unpacked, a line when a quarter
    is passed: 0/6, 2/6 (33%), 3/6 (50%), 5/6 (83%), done; its 2 files are looked at (the
    plist is no object, 50%), the DWARF file's two slices are checked, then both are stored."""
    with django_capture_on_commit_callbacks(execute=True):
        call_command("upload_debug_files", str(DSYM_ZIP), "--app", app.bundle_id)
    lines = [line.rsplit(" ", 2)[0].split(": ", 1)[1] for line in
             capsys.readouterr().err.splitlines()]  # fmt: skip
    dwarf = "libchat_cache.dylib.dSYM/Contents/Resources/DWARF/libchat_cache.dylib"
    assert [" ".join(line.split()) for line in lines] == [
        "unzip 0%", "unzip 33%", "unzip 50%", "unzip 83%", "unzip 100%",
        "check 0%", "check 50%",
        f"checked {dwarf} (x86_64) 100%", f"checked {dwarf} (arm64) 100%",
        "check 100%",
        "store 0%", "store 50%", "store 100%",
    ]  # fmt: skip


@pytest.mark.django_db
def test_a_debug_file_past_the_memory_budget_is_refused_before_its_symcache(
    client, app, ingest_secret, settings
):
    """Making a symcache reads the object whole: about 8 bytes of memory per byte of it
    (objects.SYMCACHE_FACTOR), which must fit MEMDASH_MAX_PARSE_MEMORY_BYTES."""
    size = ELF.stat().st_size
    settings.MEMDASH_MAX_PARSE_MEMORY_BYTES = size * 8 - 1  # one byte short
    answer = post(client, app, ingest_secret, ELF.read_bytes(), "chat_cache.elf")
    refused(answer, 413, f"chat_cache.elf is {size:,} bytes", "MEMDASH_MAX_PARSE_MEMORY_BYTES")
    settings.MEMDASH_MAX_PARSE_MEMORY_BYTES = size * 8  # it fits
    assert post(client, app, ingest_secret, ELF.read_bytes(), "chat_cache.elf").status_code == 202
