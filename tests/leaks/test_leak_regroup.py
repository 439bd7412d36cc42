"""Groups made by the fingerprint rules `leaks-2026.11` are regrouped under today's: the same leak
as an old and a new sanitizer print it (split in two by the old rules, which kept the C
runtime's start frames and the sanitizer runtime's unnamed module frames) ends in one group with
every record, its triage carried over by the documented rule; until then the lists show the old
groups. The old groups are stored here by hand, as the old version stored them: its fingerprint
(sha256 of the version, "stack" and the frame keys the old rules kept), version, title, frame
keys, stack and counts."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from io import StringIO
from types import SimpleNamespace

import pytest
from django.apps import apps as django_apps
from django.core.management import CommandError, call_command
from django.db.migrations import Migration
from django.db.models import Sum

from memdash.core.writes import apps as core_services
from memdash.leaks import tasks
from memdash.leaks.logic.reports import StackFrame
from memdash.leaks.models import LeakGroup, LeakRecord, LeakReport
from memdash.leaks.reads import counts_by_status
from memdash.leaks.writes.regroup import regroup_old_rules
from memdash.triage.models import Status, TriageEvent
from memdash.triage.reads import triage_history
from tests.migrations import migrate

pytestmark = pytest.mark.django_db

OLD, NEW = "leaks-2026.11", "leaks-2027.02"  # NEW: today's rules
RULES_0004 = "leaks-2026.12"  # the rules migration 0004 marked older groups to be regrouped under
RULES_0006 = "leaks-2027.01"  # and migration 0006

# The same leak: chat::Cache::store(int) called from main. GCC 9's ASan on glibc 2.31 prints it
# with its interceptor and __libc_start_main/_start; LLVM 18's LSan on glibc 2.39 with malloc,
# a frame in libasan.so.8 it could not name, and __libc_start_call_main/_impl/_start.
GCC_ASAN = [
    StackFrame(symbol="__interceptor_malloc", image="/usr/lib/x86_64-linux-gnu/libasan.so.5",
               address=0x7F1E8B2A9D28, offset=0x10D28),
    StackFrame(symbol="chat::Cache::store(int)", file="/src/cache.cpp", line=42,
               address=0x55D1C2A41B3E),
    StackFrame(symbol="main", file="/src/main.cpp", line=9, address=0x55D1C2A41C07),
    StackFrame(symbol="__libc_start_main", image="/lib/x86_64-linux-gnu/libc.so.6",
               address=0x7F1E8AE1B0B2, offset=0x270B2),
    StackFrame(symbol="_start", image="/src/build/chat", address=0x55D1C2A411EE, offset=0x11EE),
]  # fmt: skip
LLVM_LSAN = [
    StackFrame(symbol="malloc", image="/src/build/chat", address=0x55D1C2B0DF3F, offset=0xD1F3F),
    StackFrame(image="/usr/lib/x86_64-linux-gnu/libasan.so.8", address=0x7F3B595F82C1,
               offset=0xDB2C1),
    StackFrame(symbol="chat::Cache::store(int)", file="/src/cache.cpp", line=42,
               address=0x55D1C2A41B3E),
    StackFrame(symbol="main", file="/src/main.cpp", line=9, address=0x55D1C2A41C07),
    StackFrame(symbol="__libc_start_call_main",
               file="csu/../sysdeps/nptl/libc_start_call_main.h", line=58, address=0x7F3B59229D90),
    StackFrame(symbol="__libc_start_main_impl", file="csu/../csu/libc-start.c", line=360,
               address=0x7F3B59229E40),
    StackFrame(symbol="_start", image="/src/build/chat", address=0x55D1C2A6C2A4, offset=0x2C2A4),
]  # fmt: skip
# What the old rules kept of each (they skipped the allocator by name, not these), and what
# today's keep of both: the runtime's module and the start frames are skipped by what they are.
GCC_OLD_KEYS = ["chat::Cache::store(int)", "main", "__libc_start_main", "_start"]
LLVM_OLD_KEYS = ["libasan.so.8", "chat::Cache::store(int)", "main", "__libc_start_call_main",
                 "__libc_start_main_impl", "_start"]  # fmt: skip
TODAY_KEYS = ["chat::Cache::store(int)", "main"]


def digest(version: str, how: str, keys: list[str]) -> str:
    """The fingerprint as both versions compute it (sha256 of the version, "stack" or "size" and
    the keys, one a line; the first 40 hex digits)."""
    return hashlib.sha256("\n".join([version, how, *keys]).encode()).hexdigest()[:40]


@pytest.fixture
def builds(app):
    return [core_services.get_or_create_build(app, "1.0", str(n)) for n in (1, 2, 3)]


@pytest.fixture
def devices(app):
    return [core_services.get_or_create_device(app, f"D-{n}", "Pixel 8", "14") for n in (1, 2)]


def stored_group(app, version, keys, stack, *, by_size=False, title=None, **triage) -> LeakGroup:
    return LeakGroup.objects.create(
        app=app,
        fingerprint=digest(version, "size" if by_size else "stack", keys),
        fingerprint_version=version,
        title=title or keys[0],
        by_size=by_size,
        frame_keys=[] if by_size else keys,
        stack=[frame.as_dict() for frame in stack],
        **triage,
    )


def stored_record(group, build, device, size, count, frames, *, kind="direct", one=None):
    report = LeakReport.objects.create(
        app=build.app, build=build, device=device, tool="sanitizer",
        captured_at=datetime(2026, 11, 1 + build.pk % 20, 12, tzinfo=UTC),
        listed_bytes=size, listed_allocations=count, listed_records=1,
        unreachable_bytes=size, unreachable_allocations=count,
    )  # fmt: skip
    return LeakRecord.objects.create(
        report=report, app=build.app, group=group, build=build, device=device, kind=kind,
        bytes=size, allocations=count, size=one, frames=[frame.as_dict() for frame in frames],
    )  # fmt: skip


def counted(group: LeakGroup, records: list[LeakRecord]) -> None:
    """The counts and sightings the old version stored with its group."""
    group.occurrences = len(records)
    group.bytes = sum(r.bytes for r in records)
    group.allocations = sum(r.allocations for r in records)
    group.devices = len({r.device_id for r in records})
    group.builds = len({r.build_id for r in records})
    ordered = sorted((r.build for r in records), key=lambda b: b.release_key)
    group.first_seen_build, group.last_seen_build = ordered[0], ordered[-1]
    # These fields only: a whole save sets the app too, an UPDATE Citus refuses (the column
    # its tables are distributed by).
    group.save(update_fields=[
        "occurrences", "bytes", "allocations", "devices", "builds",
        "first_seen_build", "last_seen_build",
    ])  # fmt: skip


@pytest.fixture
def stored(app, member, builds, devices):
    """Under the old rules: the GCC form (two records, marked fixed in 1.0 (2) by the member),
    the LLVM form (one record in the later 1.0 (3), new), a leak without a stack (ignored), and
    a still-reachable record (no group). Under today's, a re-upload of the LLVM form."""
    b1, b2, b3 = builds
    d1, d2 = devices
    gcc = stored_group(app, OLD, GCC_OLD_KEYS, GCC_ASAN)
    gcc_records = [
        stored_record(gcc, b1, d1, 64, 1, GCC_ASAN),
        stored_record(gcc, b2, d2, 64, 1, GCC_ASAN),
    ]
    counted(gcc, gcc_records)
    # 1.0 (2) has one of its records: a fix there is what the member overrides the data with
    gcc.change_triage(member, status=Status.FIXED, fixed_in_build=b2, assignee=member,
                  notes="freed in ~Cache", override=True)  # fmt: skip
    llvm = stored_group(app, OLD, LLVM_OLD_KEYS, LLVM_LSAN)
    llvm_record = stored_record(llvm, b3, d1, 48, 3, LLVM_LSAN)
    stored_record(None, b3, d1, 4096, 2, LLVM_LSAN, kind="reachable")
    counted(llvm, [llvm_record])
    sized = stored_group(app, OLD, ["336-byte allocations"], [], by_size=True)
    counted(sized, [stored_record(sized, b1, d2, 336, 1, [], one=336)])
    sized.change_triage(member, status=Status.IGNORED, notes="Android framework")
    today = stored_group(app, NEW, TODAY_KEYS, LLVM_LSAN)
    counted(today, [stored_record(today, b3, d2, 32, 1, LLVM_LSAN)])
    return SimpleNamespace(gcc=gcc, llvm=llvm, sized=sized, today=today)


def test_the_same_leak_from_old_and_new_sanitizers_ends_in_one_group(stored, app, member, builds):
    records_before = LeakRecord.objects.count()
    bytes_before = LeakRecord.objects.aggregate(n=Sum("bytes"))["n"]
    assert (records_before, bytes_before) == (6, 64 + 64 + 48 + 4096 + 336 + 32)
    # The old rules split the leak; today's keep two frames of each form.
    assert stored.gcc.fingerprint != stored.llvm.fingerprint

    result = regroup_old_rules(app)

    # Nothing lost: every record is still there, every leak in a group of today's rules.
    assert LeakRecord.objects.count() == records_before
    assert LeakRecord.objects.aggregate(n=Sum("bytes"))["n"] == bytes_before
    assert not LeakGroup.objects.exclude(fingerprint_version=NEW).exists()
    assert LeakRecord.objects.filter(group=None).get().kind == "reachable"
    assert (result.records, result.moved, result.groups_rekeyed, result.groups_merged) == (
        4, 3, 1, 2,  # 2 + 1 + 1 old records; the leak's 3 moved; the sized group re-keyed
    )  # fmt: skip
    # The leak: today's group (the re-upload's), with the GCC form's two records and the LLVM
    # form's one. Hand-added: 64 + 64 + 48 + 32 = 208 bytes, 1 + 1 + 3 + 1 = 6 allocations,
    # devices D-1 and D-2, builds 1, 2, 3.
    leak = LeakGroup.objects.get(fingerprint=digest(NEW, "stack", TODAY_KEYS))
    assert leak.pk == stored.today.pk and leak.title == "chat::Cache::store(int)"
    assert (leak.occurrences, leak.bytes, leak.allocations) == (4, 208, 6)
    assert (leak.devices, leak.builds) == (2, 3)
    assert not LeakGroup.objects.filter(pk__in=[stored.gcc.pk, stored.llvm.pk]).exists()
    # Its triage: the GCC form's fixed (a decision beats new), with its assignee and notes; but
    # the leak was seen in 1.0 (3), after the fix in 1.0 (2): reopened as a regression.
    b1, b2, b3 = builds
    assert leak.status == Status.OPEN and leak.regression
    assert leak.assignee == member and leak.fixed_in_build == b2
    assert (
        leak.notes == f"From leak group #{stored.gcc.pk} (chat::Cache::store(int)): freed in ~Cache"
    )
    assert (leak.first_seen_build, leak.last_seen_build) == (b1, b3)
    # Its history: the member's decision (copied), the regrouping, the reopening.
    history = list(triage_history(leak))
    assert [e.kind for e in history] == [
        TriageEvent.REGRESSION,
        TriageEvent.CHANGE,
        TriageEvent.CHANGE,
    ]
    regression, regrouped, decided = history
    assert (
        decided.actor == member
        and {"field": "status", "from": "new", "to": "fixed"} in decided.changes
    )
    assert regrouped.actor is None and regrouped.changes[0] == {
        "field": "regrouped",
        "from": f"#{stored.gcc.pk}, #{stored.llvm.pk} ({OLD})",
        "to": f"#{leak.pk} ({NEW})",
    }
    assert {"field": "status", "from": "new", "to": "fixed"} in regrouped.changes
    assert regression.changes[0] == {"field": "status", "from": "fixed", "to": "open"}
    # The leak without a stack: alone, re-keyed in place (same page), still ignored.
    sized = LeakGroup.objects.get(pk=stored.sized.pk)
    assert sized.fingerprint == digest(NEW, "size", ["336-byte allocations"])
    assert (sized.status, sized.notes, sized.occurrences, sized.bytes) == (
        Status.IGNORED, "Android framework", 1, 336,
    )  # fmt: skip
    assert triage_history(sized)[0].changes == [
        {"field": "regrouped", "from": f"#{sized.pk} ({OLD})", "to": f"#{sized.pk} ({NEW})"}
    ]
    # Again: nothing left to do.
    again = regroup_old_rules(app)
    assert (again.records, again.groups_rekeyed, again.groups_merged) == (0, 0, 0)


@pytest.mark.parametrize(
    ("first", "second", "merged"),
    [
        (Status.OPEN, Status.FIXED, Status.OPEN),
        (Status.FIXED, Status.OPEN, Status.OPEN),
        (Status.IGNORED, Status.FIXED, Status.FIXED),
        (Status.NEW, Status.IGNORED, Status.IGNORED),
        (Status.FIXED, Status.NEW, Status.FIXED),
        (Status.NEW, Status.NEW, Status.NEW),
    ],
)
def test_two_old_groups_keep_the_most_active_state(
    app, member, builds, devices, first, second, merged
):
    """open > fixed > ignored > new. No group of today's rules yet: the group with more records
    (the GCC form's two) is re-keyed in place and the other merged into it. Every record is in
    a build up to the fix (1.0 (3)), so a fix holds."""
    b1, b2, b3 = builds
    gcc = stored_group(app, OLD, GCC_OLD_KEYS, GCC_ASAN)
    counted(gcc, [stored_record(gcc, b1, devices[0], 64, 1, GCC_ASAN),
                  stored_record(gcc, b2, devices[0], 64, 1, GCC_ASAN)])  # fmt: skip
    llvm = stored_group(app, OLD, LLVM_OLD_KEYS, LLVM_LSAN)
    counted(llvm, [stored_record(llvm, b2, devices[1], 48, 3, LLVM_LSAN)])
    for group, status in ((gcc, first), (llvm, second)):
        fixed = b3 if status == Status.FIXED else None
        group.change_triage(member, status=status, fixed_in_build=fixed)

    regroup_old_rules(app)

    (leak,) = LeakGroup.objects.all()
    assert leak.pk == gcc.pk and leak.fingerprint == digest(NEW, "stack", TODAY_KEYS)
    # 64 + 64 + 48 bytes, 1 + 1 + 3 allocations, in 1.0 (1) and 1.0 (2).
    assert (leak.occurrences, leak.bytes, leak.allocations, leak.builds) == (3, 176, 5, 2)
    assert leak.status == merged and not leak.regression
    assert leak.fixed_in_build == (b3 if merged == Status.FIXED else None)
    assert triage_history(leak)[0].changes[0]["from"] == f"#{gcc.pk}, #{llvm.pk} ({OLD})"


def test_old_groups_without_records_keep_their_triage(app, member, builds, devices):
    """Groups whose records went with their builds: fingerprinted again from the stack they
    show; one joins today's group of its leak (its fixed state beats new), one is re-keyed."""
    today = stored_group(app, NEW, TODAY_KEYS, LLVM_LSAN)
    counted(today, [stored_record(today, builds[0], devices[0], 32, 1, LLVM_LSAN)])
    gcc = stored_group(app, OLD, GCC_OLD_KEYS, GCC_ASAN)
    gcc.change_triage(member, status=Status.FIXED, fixed_in_build=builds[1], notes="freed")
    sized = stored_group(app, OLD, ["144-byte allocations"], [], by_size=True)
    sized.change_triage(member, status=Status.OPEN)

    result = regroup_old_rules(app)

    assert (result.records, result.groups_rekeyed, result.groups_merged) == (0, 1, 1)
    assert set(LeakGroup.objects.values_list("pk", flat=True)) == {today.pk, sized.pk}
    today.refresh_from_db()
    assert (today.status, today.fixed_in_build, today.occurrences) == (Status.FIXED, builds[1], 1)
    assert today.notes == f"From leak group #{gcc.pk} (chat::Cache::store(int)): freed"
    sized.refresh_from_db()
    assert sized.fingerprint == digest(NEW, "size", ["144-byte allocations"])
    assert (sized.fingerprint_version, sized.status) == (NEW, Status.OPEN)


def test_old_groups_stay_listed_until_regrouped(stored, app, member_client, api_client):
    page = member_client.get(f"/apps/{app.pk}/leaks/?status=all")
    assert page.status_code == 200
    html = page.content.decode()
    for group in (stored.gcc, stored.llvm, stored.sized, stored.today):
        assert f'data-group-id="{group.pk}"' in html
    assert html.count(f">rules {OLD}</span>") == 3
    # The default list (new and open): the LLVM form and the re-upload; the fixed and the
    # ignored are counted under their status.
    listed = member_client.get(f"/apps/{app.pk}/leaks/").content.decode()
    assert f'data-group-id="{stored.llvm.pk}"' in listed
    assert counts_by_status(app) == {"new": 2, "open": 0, "fixed": 1, "ignored": 1}
    body = api_client.get(f"/api/v1/apps/{app.pk}/leaks").json()
    assert {g["id"]: g["fingerprint_version"] for g in body["groups"]}[stored.llvm.pk] == OLD
    page = member_client.get(f"/apps/{app.pk}/leaks/{stored.llvm.pk}/")
    assert "grouped by older rules" in page.content.decode()

    regroup_old_rules(app)

    html = member_client.get(f"/apps/{app.pk}/leaks/?status=all").content.decode()
    assert f">rules {OLD}</span>" not in html
    assert counts_by_status(app) == {"new": 0, "open": 1, "fixed": 0, "ignored": 1}


def test_the_command_regroups_with_progress(stored, app):
    out = StringIO()
    call_command("regroup_leaks", "--app", app.bundle_id, stdout=out)
    lines = out.getvalue().splitlines()
    assert lines == [
        "com.example.chat: 3 of 3 old groups, 4 records",
        f"com.example.chat: 4 records regrouped under {NEW} (3 moved), 1 groups re-keyed, 2 merged",
    ]
    out = StringIO()
    call_command("regroup_leaks", stdout=out)
    assert out.getvalue() == f"Every leak group is grouped by {NEW}.\n"
    with pytest.raises(CommandError, match="no single app matches 'com.example.none'"):
        call_command("regroup_leaks", "--app", "com.example.none")


@pytest.mark.slow  # migrations back and forth
@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("back_to_latest")
def test_the_migration_marks_old_groups():
    old = migrate([("leaks", "0003_report_kinds")])
    app = old.get_model("core", "App").objects.create(bundle_id="com.example.mig", platform="ios")
    build = old.get_model("core", "Build").objects.create(app=app, version="1.0")
    group = old.get_model("leaks", "LeakGroup")
    made = {
        version: group.objects.create(
            app=app, fingerprint=digest(version, "stack", TODAY_KEYS), fingerprint_version=version,
            title="chat::Cache::store(int)", frame_keys=TODAY_KEYS,
        ).pk
        for version in (OLD, RULES_0004)
    }  # fmt: skip
    report = old.get_model("leaks", "LeakReport").objects.create(
        app=app, build=build, tool="sanitizer", captured_at=datetime(2026, 11, 2, tzinfo=UTC)
    )
    old.get_model("leaks", "LeakRecord").objects.create(
        report=report, group_id=made[OLD], build=build, kind="direct", bytes=64, allocations=1
    )

    marked = migrate([("leaks", "0004_mark_groups_for_regrouping")])

    marks = TriageEvent.objects.filter(changes__0__field="fingerprint rules")
    assert [(e.object_id, e.actor, e.changes) for e in marks] == [
        (
            made[OLD],
            None,
            [{"field": "fingerprint rules", "from": OLD, "to": f"{RULES_0004}: to regroup"}],
        )
    ]
    assert marks.get().content_type.model_class() is LeakGroup
    # Nothing else changed: the records are where they were, both groups listed (read with the
    # models of that migration: later ones add columns, such as the app's id).
    assert marked.get_model("leaks", "LeakRecord").objects.get().group_id == made[OLD]
    assert marked.get_model("leaks", "LeakGroup").objects.count() == 2


@pytest.mark.slow  # migrations back and forth
@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("back_to_latest")
def test_the_2027_01_migration_marks_the_groups_of_older_rules():
    """Migration 0006: groups of `leaks-2026.12` (and older) are marked to be regrouped under
    `leaks-2027.01`, which skips Apple's allocator and loader frames; today's are left alone."""
    old = migrate([("leaks", "0005_reports_once_per_upload")])
    app = old.get_model("core", "App").objects.create(bundle_id="com.example.mig", platform="ios")
    group = old.get_model("leaks", "LeakGroup")
    made = {
        version: group.objects.create(
            app=app, fingerprint=digest(version, "stack", TODAY_KEYS), fingerprint_version=version,
            title="chat::Cache::store(int)", frame_keys=TODAY_KEYS,
        ).pk
        for version in (RULES_0004, RULES_0006)
    }  # fmt: skip

    migrate([("leaks", "0006_mark_groups_for_regrouping_2027_01")])

    marks = TriageEvent.objects.filter(changes__0__field="fingerprint rules")
    assert [(e.object_id, e.changes) for e in marks] == [
        (made[RULES_0004],
         [{"field": "fingerprint rules", "from": RULES_0004, "to": f"{RULES_0006}: to regroup"}])
    ]  # fmt: skip


@pytest.mark.slow  # migrations back and forth
@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("back_to_latest")
def test_the_2027_02_migration_marks_the_groups_of_older_rules():
    """Migration 0008: groups of `leaks-2027.01` (and older) are marked to be regrouped under
    `leaks-2027.02` (stacks without names by offset, module text out of stored names); today's
    are left alone."""
    old = migrate([("leaks", "0007_leakcanary_traces")])
    app = old.get_model("core", "App").objects.create(bundle_id="com.example.mig", platform="ios")
    group = old.get_model("leaks", "LeakGroup")
    made = {
        version: group.objects.create(
            app=app, fingerprint=digest(version, "stack", TODAY_KEYS), fingerprint_version=version,
            title="chat::Cache::store(int)", frame_keys=TODAY_KEYS,
        ).pk
        for version in (RULES_0006, NEW)
    }  # fmt: skip

    migrate([("leaks", "0008_mark_groups_for_regrouping_2027_02")])

    marks = TriageEvent.objects.filter(changes__0__field="fingerprint rules")
    assert [(e.object_id, e.changes) for e in marks] == [
        (made[RULES_0006],
         [{"field": "fingerprint rules", "from": RULES_0006, "to": f"{NEW}: to regroup"}])
    ]  # fmt: skip


def test_a_migrate_that_applied_leaks_migrations_queues_the_regrouping(stored, app):
    leaks = django_apps.get_app_config("leaks")
    # Migrated backwards, or nothing of leaks applied, or a flush (no plan): nothing queued.
    tasks.regroup_after_migrate(leaks, plan=[(Migration("0004_x", "leaks"), True)])
    tasks.regroup_after_migrate(leaks, plan=[(Migration("0002_x", "cycles"), False)])
    tasks.regroup_after_migrate(leaks, plan=None)
    assert LeakGroup.objects.filter(fingerprint_version=OLD).count() == 3
    # A migrate that applied leaks migrations and left all applied: regrouped (the embedded
    # task backend runs the queued task at once).
    tasks.regroup_after_migrate(leaks, plan=[(Migration("0004_x", "leaks"), False)])
    assert not LeakGroup.objects.filter(fingerprint_version=OLD).exists()
    assert LeakRecord.objects.count() == 6
    assert LeakGroup.objects.get(pk=stored.today.pk).occurrences == 4
