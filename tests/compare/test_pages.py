"""The compare pages render what the API computes, and show names as text."""

from __future__ import annotations

import html

import pytest

from tests.compare.helpers import SNAPSHOT_A_ROWS, SNAPSHOT_B_ROWS, document, row, store

pytestmark = pytest.mark.django_db

HOSTILE = "<script>alert('x')</script>"


@pytest.fixture
def snapshots(upload):
    a = store(upload, document(SNAPSHOT_A_ROWS))
    b_rows = [*SNAPSHOT_B_ROWS, row(HOSTILE, 3, None, 1, 48)]
    b = store(upload, document(b_rows, version="2.0", number="2", device="D-2", generations=[]))
    return a, b


def test_generation_diff_page_defaults_to_the_last_two_generations(member_client, app, snapshots):
    a, _ = snapshots
    response = member_client.get(f"/apps/{app.pk}/snapshots/{a}/generation-diff/")
    assert response.status_code == 200
    # the last mark (Idle, empty) against the one before it (Open): everything of Open is gone
    assert response.context["base"].ref == f"generation:{a}:1"
    assert response.context["target"].ref == f"generation:{a}:2"
    assert [r.status for r in response.context["rows"]] == ["gone", "gone", "gone"]
    html = response.content.decode()
    assert 'id="difftree"' in html and "js/difftree_page.js" in html
    assert 'id="difftree-config"' in html
    # the first generation against the baseline before it
    response = member_client.get(f"/apps/{app.pk}/snapshots/{a}/generation-diff/?target=0")
    assert response.context["base"].ref == f"generation:{a}:baseline"
    # a missing generation is a 404, not a 500
    bad = member_client.get(f"/apps/{app.pk}/snapshots/{a}/generation-diff/?target=9")
    assert bad.status_code == 404


def test_snapshot_diff_page(member_client, app, snapshots):
    a, b = snapshots
    picker = member_client.get(f"/apps/{app.pk}/snapshot-diff/")
    assert picker.status_code == 200 and picker.context["pick"]
    response = member_client.get(f"/apps/{app.pk}/snapshot-diff/?base={a}&target={b}")
    assert response.status_code == 200
    assert [r.category for r in response.context["rows"]][:2] == ["Cache", "New"]
    html = response.content.decode()
    assert HOSTILE not in html
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in html
    filtered = member_client.get(f"/apps/{app.pk}/snapshot-diff/?base={a}&target={b}&q=cac")
    assert [r.category for r in filtered.context["rows"]] == ["Cache"]


def test_diff_summary_cards_follow_the_search(member_client, app, snapshots):
    """As the statistics table's summary rows: under a search the cards sum what matches, and
    their labels say so. Persistent (the diff's default lifespan):
    A: Cache 2 + 3 + 5 = 10 allocations, 200 + 300 + 500 = 1000 bytes; Cell 14, 640 + 256 = 896;
    Old 1, 32; NoStack 1, 16 — 1944 bytes in 26.
    B: Cache 20, 2000; Cell 14, 896; New 1, 1000; the hostile category 1, 48 — 3944 bytes in 36."""
    a, b = snapshots
    url = f"/apps/{app.pk}/snapshot-diff/?base={a}&target={b}"
    whole = member_client.get(url).context["summary"]
    assert (whole["base_bytes"], whole["target_bytes"], whole["delta_bytes"]) == (1944, 3944, 2000)
    assert (whole["base_count"], whole["target_count"], whole["categories"]) == (26, 36, 6)

    response = member_client.get(url + "&q=ca")  # Cache alone (case-insensitive)
    summary = response.context["summary"]
    # 1000 bytes in 10 → 2000 in 20: +1000 bytes, +100 %, +10 allocations, one grown category
    assert (summary["base_bytes"], summary["target_bytes"]) == (1000, 2000)
    assert (summary["base_count"], summary["target_count"]) == (10, 20)
    assert (summary["delta_bytes"], summary["delta_percent"], summary["delta_count"]) == (
        1000, 100, 10,
    )  # fmt: skip
    assert summary["categories"] == 1 and summary["statuses"]["grown"] == 1
    html = response.content.decode()
    for label in ("Base", "Target", "Delta", "Categories"):
        assert f'<div class="muted">{label} (matching “ca”)</div>' in html
    assert '<div class="value">1000 Bytes</div>' in html
    assert '<div class="muted">Base</div>' in member_client.get(url).content.decode()


def test_snapshot_diff_with_one_side_picks_the_other(member_client, app, upload):
    # four snapshots, captured in this order: D-1 of 1.0, D-2 of 1.0 (another device),
    # D-1 of 2.0 at a FOOM (another trigger), D-1 of 2.0 periodic
    times = ["2026-11-01T10:00:00Z", "2026-11-02T10:00:00Z", "2026-11-03T10:00:00Z",
             "2026-11-04T10:00:00Z"]  # fmt: skip
    d1_old = store(upload, document(SNAPSHOT_B_ROWS, generations=[], captured_at=times[0]))
    d2_old = store(upload, document(SNAPSHOT_B_ROWS, device="D-2", model="iPhone12,1",
                                    generations=[], captured_at=times[1]))  # fmt: skip
    foom = store(upload, document(SNAPSHOT_B_ROWS, version="2.0", number="2", trigger="foom",
                                  generations=[], captured_at=times[2]))  # fmt: skip
    latest = store(upload, document(SNAPSHOT_B_ROWS, version="2.0", number="2", generations=[],
                                    captured_at=times[3]))  # fmt: skip
    url = f"/apps/{app.pk}/snapshot-diff/"

    # "Compare with another snapshot" of the latest: the diff against the last earlier snapshot
    # of the same device and trigger (not the later-captured FOOM or the other device's)
    response = member_client.get(f"{url}?target={latest}")
    assert response.status_code == 200 and not response.context.get("pick")
    assert (response.context["base"].ref, response.context["target"].ref) == (
        f"snapshot:{d1_old}", f"snapshot:{latest}",
    )  # fmt: skip
    assert (response.context["base_choice"], response.context["target_choice"]) == (d1_old, latest)
    html = response.content.decode()
    assert f'<option value="{d1_old}" selected>' in html
    assert f'<option value="{latest}" selected>' in html
    assert "the last snapshot of the same device and trigger captured before" in html
    # a lone base: the first later snapshot of the same scenario
    response = member_client.get(f"{url}?base={d1_old}")
    assert response.context["target"].ref == f"snapshot:{latest}"
    # the first snapshot has none before it: the latest other one
    response = member_client.get(f"{url}?target={d1_old}")
    assert response.context["base"].ref == f"snapshot:{latest}"
    assert "none was captured before" in response.content.decode()
    # the FOOM snapshot: no earlier FOOM, no earlier snapshot of its build: the last before it
    response = member_client.get(f"{url}?target={foom}")
    assert response.context["base"].ref == f"snapshot:{d2_old}"
    # the same snapshot twice: the pickers and a message, no diff of a snapshot with itself
    response = member_client.get(f"{url}?base={latest}&target={latest}")
    assert response.context["pick"] and "same snapshot" in response.context["pick_message"]
    # another app's or an unknown snapshot is a 404
    assert member_client.get(f"{url}?target=999999").status_code == 404


def test_snapshot_diff_of_an_only_snapshot(member_client, app, upload):
    only = store(upload, document(SNAPSHOT_B_ROWS, generations=[]))
    response = member_client.get(f"/apps/{app.pk}/snapshot-diff/?target={only}")
    assert response.status_code == 200 and response.context["pick"]
    assert response.context["target_choice"] == only
    assert "only this snapshot" in response.content.decode()


def test_build_compare_page(member_client, app, snapshots):
    response = member_client.get(f"/apps/{app.pk}/compare/?max_growth=5%25")
    assert response.status_code == 200
    context = response.context
    # defaults: the last two builds with snapshots, in release order
    assert (str(context["base"]), str(context["target"])) == ("1.0 (1)", "2.0 (2)")
    assert context["chart"] is not None
    # 1944 B -> 3944 B per snapshot is well past 5%, but one snapshot against one: either
    # order of the two values is as extreme, p = 1. Not significant, so the gate passes and
    # says what it did not fail on (it failed before significance counted)
    assert context["failures"] == []
    assert [f.category for f in context["unproven"]][0] == "All Heap & Anonymous VM"
    html = response.content.decode()
    assert 'id="compare-table"' in html and 'id="compare-chart"' in html
    assert 'id="gate"' in html and "Passes" in html and 'id="gate-unproven"' in html
    assert "+1.95 KiB, p = 1.000)" in html and "rank test p = 1.000" in html
    assert "p = &lt;" not in html and "p = <" not in html
    assert HOSTILE not in html


def test_p_value_in_a_sentence():
    from memdash.compare.templatetags.compare_tags import p_clause, pvalue

    assert (p_clause(0.0004), p_clause(0.023), p_clause(None)) == (
        "p < 0.001",
        "p = 0.023",
        "p n/a",
    )
    assert (pvalue(0.0004), pvalue(0.023)) == ("< 0.001", "0.023")  # table cells: the number only


def test_same_build_asks_for_two_builds(member_client, app, snapshots):
    url = f"/apps/{app.pk}/compare/"
    base_id = member_client.get(url).context["base"].pk
    response = member_client.get(f"{url}?base={base_id}&target={base_id}")
    assert response.status_code == 200
    assert "comparison" not in response.context and response.context["same_build"]
    assert not response.context["single_build"]  # 2.0 (2) has snapshots too
    html = response.content.decode()
    assert 'id="same-build"' in html and "Choose two different builds" in html
    assert 'id="compare-table"' not in html and 'id="compare-chart"' not in html


def test_same_build_when_only_one_build_has_snapshots(member_client, app, upload):
    store(upload, document(SNAPSHOT_B_ROWS, generations=[]))
    response = member_client.get(f"/apps/{app.pk}/compare/")
    assert response.context["same_build"] and response.context["single_build"]
    assert "Only this build has snapshots so far" in response.content.decode()


def test_trends_page(member_client, app, snapshots):
    response = member_client.get(f"/apps/{app.pk}/trends/?category=Cache&category=Nope")
    assert response.status_code == 200
    assert response.context["categories"] == ["Cache"]  # unknown names are dropped
    points = response.context["points"]
    assert [str(p.build) for p in points] == ["1.0 (1)", "2.0 (2)"]
    # whole heap per snapshot: A 1944 B (persistent), B 3944 B; Cache 1000 -> 2000
    assert [p.total.median for p in points] == [1944, 3944]
    assert [p.categories["Cache"].median for p in points] == [1000, 2000]
    chart = response.context["chart"]
    # as plotly draws them: the payload's strings are plain text, entities decoded by plotly
    names = [html.unescape(trace["name"]) for trace in chart["data"]]
    assert names == ["All Heap & Anonymous VM", "Cache"]
    # clicking a point opens its build
    assert chart["data"][0]["customdata"] == [p.build.get_absolute_url() for p in points]
    assert HOSTILE not in response.content.decode()


def test_empty_app_pages(member_client, app):
    assert member_client.get(f"/apps/{app.pk}/compare/").status_code == 200
    assert member_client.get(f"/apps/{app.pk}/trends/").status_code == 200
    assert member_client.get(f"/apps/{app.pk}/snapshot-diff/").status_code == 200


def test_trends_by_capture_date_in_a_range_on_a_log_axis(member_client, app, snapshots, upload):
    """A (1.0) and B (2.0) were captured on 20 Nov; C, A's rows again in 1.0, on 22 Nov."""
    store(upload, document(SNAPSHOT_A_ROWS, device="D-3", captured_at="2026-11-22T09:00:00Z"))
    url = f"/apps/{app.pk}/trends/"

    by_date = member_client.get(url + "?x=date&category=Cache")
    points = by_date.context["points"]
    assert [p.label for p in points] == ["2026-11-20", "2026-11-22"]
    # 20 Nov: 1944 and 3944 bytes → median 2944; 22 Nov: 1944; Cache 1000, 2000 → 1500; 1000
    assert [p.total.median for p in points] == [2944, 1944]
    assert [p.categories["Cache"].median for p in points] == [1500, 1000]
    chart = by_date.context["chart"]
    assert chart["layout"]["xaxis"]["type"] == "date"
    assert chart["data"][0]["x"] == ["2026-11-20", "2026-11-22"]
    assert "customdata" not in chart["data"][0]  # a day is no page to open

    # the range keeps what was captured from 21 Nov on: C alone, in build 1.0
    ranged = member_client.get(url + "?from=2026-11-21&scale=log")
    assert [(str(p.build), p.snapshots, p.total.median) for p in ranged.context["points"]] == [
        ("1.0 (1)", 1, 1944)
    ]
    axis = ranged.context["chart"]["layout"]["yaxis"]
    assert axis["type"] == "log"
    # 1944 B lies between 2^10 and 2^11: the ticks 1 KiB and 2 KiB around it
    assert axis["tickvals"] == [1024, 2048]
    # the permalink: the form shows what the query string chose
    page = ranged.content.decode()
    assert '<option value="log" selected>' in page
    assert 'name="from" value="2026-11-21"' in page

    csv = member_client.get(url + "?x=date&to=2026-11-20&format=csv")
    lines = b"".join(csv.streaming_content).decode().splitlines()
    assert lines[0].startswith("Date,Snapshots,Series,Median bytes")
    # the quartiles of two values interpolate between them, as the page's
    assert lines[1:] == ["2026-11-20,2,All Heap & Anonymous VM,2944.0,2444.0,3444.0,1944,3944"]


def test_trends_refuses_what_it_cannot_read(member_client, app, snapshots):
    url = f"/apps/{app.pk}/trends/"
    for query, message in [
        ("?from=20-11-2026", "from: must be a date, like 2026-11-20"),
        ("?from=2026-11-21&to=2026-11-20", "to: must not be before from"),
        ("?x=week", "x: must be one of build, date"),
        ("?scale=cubic", "scale: must be one of linear, log"),
    ]:
        response = member_client.get(url + query)
        assert response.status_code == 400, query
        assert message in response.content.decode(), query
        assert "chart" not in response.context
