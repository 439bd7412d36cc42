"""The link to weaken of a cluster (the bad link its loops share), marked in the drawing and the
member rows, and the cluster's occurrences listed with device, OS, build and time, a page at a
time."""

from __future__ import annotations

import pytest

from memdash.core.writes import apps as core_services
from memdash.cycles import demo
from memdash.cycles.logic.clustering import canonical_cycle, link_to_weaken, marked
from memdash.cycles.logic.drawing import draw_loop
from memdash.cycles.models import DEFAULT_SYSTEM_PREFIXES, Cluster
from memdash.cycles.web.views import OCCURRENCES_PAGE
from tests.core.test_exports import csv_rows, page_rows
from tests.cycles.helpers import builds, store

BLOCK = "__NSMallocBlock__"


def test_a_single_loop_weakens_its_back_reference():
    # VoiceNoteCell -_player-> VoiceNotePlayer -_timer-> __NSCFTimer -_target-> VoiceNoteCell:
    # the timer's target is the reference back to the cell that owns the player
    timer = canonical_cycle(demo.TIMER)
    assert timer[0][0] == "VoiceNoteCell"  # "V" sorts before "_": the rotation starts there
    weak = link_to_weaken(timer, [timer], DEFAULT_SYSTEM_PREFIXES)
    assert weak is not None
    assert (weak.position, weak.reference) == (0, ("__NSCFTimer", ("_target",), "VoiceNoteCell"))
    assert weak.reason == "a reference back to VoiceNoteCell, which usually owns __NSCFTimer"
    # alone, the chat loop's block captures the controller: capture it weakly
    chat = canonical_cycle(demo.CHAT[0])
    alone = link_to_weaken(chat, [chat], DEFAULT_SYSTEM_PREFIXES)
    assert alone is not None and alone.reference == (BLOCK, (), "ChatViewController")
    assert alone.reason == "a block holds ChatViewController strongly: capture it weakly"


def test_the_cluster_prefers_the_reference_every_loop_shares():
    # X -_y-> Y -_x-> X and X -_y-> Y -_z-> Z -_x-> X: three references into app classes, none
    # a capture or a back-reference; only X._y -> Y is in both loops
    pair = (("X", ("_x",)), ("Y", ("_y",)))
    triple = (("X", ("_x",)), ("Y", ("_y",)), ("Z", ("_z",)))
    weak = link_to_weaken(pair, [pair, triple], DEFAULT_SYSTEM_PREFIXES)
    assert weak is not None and (weak.position, weak.reference) == (1, ("X", ("_y",), "Y"))
    assert weak.reason == (
        "all 2 loops of this cluster go through it; a strong reference into the app class Y"
    )
    assert [w for _cls, _via, w in marked(triple, weak.reference)] == [False, True, False]
    # a block's capture of the controller outranks the shared references: in the demo's chat
    # cluster, the loop through ChatInputBar goes through _dataSource and _onUpdate as well, but
    # the block's capture of ChatViewController is the one to weaken (the demo's fix)
    chat, chat_input = canonical_cycle(demo.CHAT[0]), canonical_cycle(demo.CHAT_INPUT)
    weak = link_to_weaken(chat, [chat, chat_input], DEFAULT_SYSTEM_PREFIXES)
    assert weak is not None and weak.reference == (BLOCK, (), "ChatViewController")
    assert weak.reason == "a block holds ChatViewController strongly: capture it weakly"
    drawing = draw_loop(chat, lambda cls: cls.startswith("__NS"), weak.position)
    assert [a.weak for a in drawing.arrows] == [i == weak.position for i in range(3)]
    assert drawing.arrows[weak.position].label == "(unnamed)"
    assert link_to_weaken((), [], DEFAULT_SYSTEM_PREFIXES) is None


@pytest.fixture
def cluster(app) -> Cluster:
    b1, b2 = builds(app, 2)
    core_services.get_or_create_device(app, "D-1", "iPhone14,5", "17.4.1")
    core_services.get_or_create_device(app, "D-2", "iPhone12,1", "16.7.2")
    # B -_a-> A -_delegate-> B, and C -_a-> A -_delegate-> B -_c-> C: the same cluster (A, B);
    # A._delegate -> B, a back-reference, is in both
    pair = (("A", ("_a",)), ("B", ("_delegate",)))
    triple = (("A", ("_a",)), ("B", ("_delegate",)), ("C", ("_c",)))
    store(app, b1, [pair] * 30, device_key="D-1", hours=0)
    store(app, b2, [pair] * 20 + [triple] * 5, device_key="D-2", hours=5)
    return Cluster.objects.get(app=app, key=["A", "B"])


@pytest.mark.django_db
def test_cluster_page_marks_the_link_and_lists_occurrences(member_client, app, cluster):
    url = cluster.get_absolute_url()
    html = member_client.get(url).content.decode()
    weaken = html[html.index('id="weaken"') : html.index("</p>", html.index('id="weaken"'))]
    assert '<span class="weak-ref">_delegate</span> → B' in weaken
    assert "all 2 loops of this cluster go through it" in weaken
    svg = html[html.index("<svg") : html.index("</svg>")]
    assert svg.count('data-weaken="1"') == 1 and svg.count('class="ref weak"') == 1
    members = html[html.index('class="members"') :]
    assert members.count('class="via weak-ref"') == 2  # one in each loop
    # 55 occurrences: 25 of build 8.0.2 on the iPhone12,1 (17:00), then 30 of 8.0.1 (12:00)
    assert OCCURRENCES_PAGE == 50
    rows = page_rows(member_client, url, "cycle-occurrences-list")
    assert len(rows) == 50
    assert rows[0] == ["2026-11-01 17:00 UTC", "iPhone12,1", "16.7.2", "8.0.2 (102)"]
    assert rows[-1] == ["2026-11-01 12:00 UTC", "iPhone14,5", "17.4.1", "8.0.1 (101)"]
    assert rows.count(rows[0]) == 25
    second = page_rows(member_client, url + "?page=2", "cycle-occurrences-list")
    assert second == [["2026-11-01 12:00 UTC", "iPhone14,5", "17.4.1", "8.0.1 (101)"]] * 5
    build_link = f'<a href="{cluster.first_seen_build.get_absolute_url()}" class="build-link">'
    assert build_link in html
    exported = csv_rows(member_client, url, table="occurrences")
    assert len(exported) == 55
    assert exported[0] == ["2026-11-01T17:00:00+00:00", "iPhone12,1", "16.7.2", "8.0.2 (102)"]
