"""Build compare, the compare API with the CI gate, and memdash_check, worked out by hand."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from tests.compare.helpers import compare, document, row, store

pytestmark = pytest.mark.django_db

# Persistent (count, bytes) of each snapshot; a snapshot without "Leak" counts 0 for it.
BUILD_1 = [  # three periodic snapshots of 1.0 (1)
    [row("Leak", 2, None, 1, 100), row("Steady", 3, None, 10, 1000)],
    [row("Steady", 3, None, 10, 1100)],
    [row("Leak", 2, None, 2, 200), row("Steady", 3, None, 10, 900)],
]
BUILD_2 = [  # three periodic snapshots of 2.0 (2)
    [row("Leak", 2, None, 5, 500), row("Steady", 3, None, 10, 1000)],
    [row("Leak", 2, None, 6, 600), row("Steady", 3, None, 10, 1000)],
    [row("Leak", 2, None, 7, 700), row("Steady", 3, None, 10, 1000)],
]
# ... and one outlier of 2.0 on another device, captured at a FOOM
OUTLIER = [row("Leak", 2, None, 100, 100_000), row("Steady", 3, None, 10, 1000)]


def store_two_builds(upload, base: list, target: list) -> None:
    """Build 1.0 (1) from one snapshot per item of `base` on devices A-i, 2.0 (2) from `target`
    on devices B-i."""
    for i, rows in enumerate(base):
        store(upload, document(rows, device=f"A-{i}", generations=[]))
    for i, rows in enumerate(target):
        store(upload, document(rows, version="2.0", number="2", device=f"B-{i}", generations=[]))


@pytest.fixture
def builds(upload):
    store_two_builds(upload, BUILD_1, BUILD_2)
    store(upload, document(OUTLIER, version="2.0", number="2", device="C-1", model="iPhone15,2",
                           trigger="foom", generations=[]))  # fmt: skip


def test_compare_all_snapshots(api_client, app, builds):
    body = compare(api_client, app)
    assert (body["base"]["snapshots"], body["target"]["snapshots"]) == (3, 4)
    # no limit asked: the gate's default 5%; Leak's median 100 -> 650 is past it, but with 3
    # snapshots against 4 the smallest p is 2/35 = 0.057, not below the default alpha 0.05:
    # "changed, not significant", and the gate passes, naming what it did not fail on
    # (behaviour changed: the gate fails only on significant growth)
    assert (body["max_growth"], body["alpha"], body["pass"]) == ("5%", 0.05, True)
    assert [f["category"] for f in body["not_significant"]] == ["All Heap & Anonymous VM", "Leak"]
    leak = body["rows"][0]
    assert leak["category"] == "Leak" and leak["status"] == "changed"
    # base 100, 0, 200: mean = median = 100; target 500, 600, 700, 100000:
    # median (600 + 700) / 2 = 650, mean 101800 / 4 = 25450
    assert (leak["base_bytes_mean"], leak["base_bytes_median"]) == (100, 100)
    assert (leak["target_bytes_median"], leak["target_bytes_mean"]) == (650, 25450)
    assert (leak["delta_median_bytes"], leak["delta_mean_bytes"]) == (550, 25350)
    # counts: (1 + 0 + 2) / 3 = 1 -> (5 + 6 + 7 + 100) / 4 = 29.5
    assert leak["delta_mean_count"] == 28.5
    assert (leak["base_present"], leak["target_present"]) == (2, 4)
    # 3 against 4, fully separated: 2 of C(7, 3) = 35 splits as extreme -> p = 0.0571
    assert leak["p_value"] == pytest.approx(2 / 35) and leak["test"] == "exact"
    assert leak["significant"] is False
    steady = body["rows"][1]
    assert steady["category"] == "Steady" and steady["status"] == "same"
    # at alpha 0.1, p = 0.057 is significant: Leak has grown and fails the gate; so does the
    # whole heap (1100, 1100, 1100 -> 1500, 1600, 1700, 101000: separated too, p = 2/35)
    lenient = compare(api_client, app, alpha="0.1")
    assert lenient["rows"][0]["status"] == "grown" and lenient["rows"][0]["significant"] is True
    assert [f["category"] for f in lenient["failures"]] == ["All Heap & Anonymous VM", "Leak"]
    assert lenient["pass"] is False and lenient["not_significant"] == []


def test_filters_compare_like_with_like(api_client, app, builds):
    body = compare(api_client, app, trigger="periodic")
    assert (body["base"]["snapshots"], body["target"]["snapshots"]) == (3, 3)
    leak = body["rows"][0]
    assert (leak["target_bytes_median"], leak["target_bytes_mean"]) == (600, 600)
    assert leak["p_value"] == pytest.approx(2 / 20)  # 3 against 3, separated
    # whole heap per snapshot: 1100, 1100, 1100 -> 1500, 1600, 1700
    total = body["total"]
    assert total["category"] == "All Heap & Anonymous VM"
    assert (total["base_bytes_median"], total["target_bytes_median"]) == (1100, 1600)
    only_model = compare(api_client, app, model="iPhone15,2")
    assert (only_model["base"]["snapshots"], only_model["target"]["snapshots"]) == (0, 1)


def test_gate_through_the_api(api_client, app, builds):
    # 3 periodic snapshots against 3, fully separated: p = 2/20 = 0.1. Not significant at the
    # default alpha: the gate passes; at alpha 0.2 the growth is significant and fails it
    strict = compare(api_client, app, trigger="periodic", max_growth="5%")
    assert strict["pass"] is True and strict["failures"] == []
    assert [f["p_value"] for f in strict["not_significant"]] == [pytest.approx(0.1)] * 2
    body = compare(api_client, app, trigger="periodic", max_growth="5%", alpha="0.2")
    assert body["pass"] is False
    # medians: whole heap 1100 -> 1600 (+500, 55 allowed), Leak 100 -> 600 (+500, 5 allowed);
    # Steady 1000 -> 1000
    failures = [(f["category"], f["delta_bytes"], f["allowed_bytes"]) for f in body["failures"]]
    assert failures == [("All Heap & Anonymous VM", 500, 55), ("Leak", 500, 5)]
    lenient = {"trigger": "periodic", "alpha": "0.2"}
    assert compare(api_client, app, max_growth="500", **lenient)["pass"] is True
    assert compare(api_client, app, max_growth="5%", min_delta="1KiB", **lenient)["pass"]
    # any bytes the schema allows: past 2^63 - 1, as large as any growth can be (all ignored);
    # limits past a float's range, every growth within them
    huge = "9" * 400
    assert compare(api_client, app, max_growth="5%", min_delta=huge + "GiB", **lenient)["pass"]
    assert compare(api_client, app, max_growth=huge + "%", **lenient)["pass"] is True
    assert compare(api_client, app, max_growth=huge, **lenient)["pass"] is True
    assert compare(api_client, app, max_growth=" 5 % ", min_delta="  ", **lenient) == body
    steady = compare(api_client, app, max_growth="5%", category="Steady", **lenient)
    assert steady["pass"] is True and [r["category"] for r in steady["rows"]] == ["Steady"]


def test_compare_pages_rows_but_gates_every_category(api_client, app, builds):
    whole = compare(api_client, app, trigger="periodic", max_growth="5%", alpha="0.2")
    assert (whole["count"], whole["offset"], whole["limit"], whole["next"]) == (2, 0, 500, None)
    first = compare(api_client, app, trigger="periodic", max_growth="5%", alpha="0.2", limit=1)
    # one row a page, Leak first (significant at 0.2, p = 0.1); the gate still sees both
    assert [r["category"] for r in first["rows"]] == ["Leak"]
    assert (first["count"], first["limit"]) == (2, 1)
    assert first["failures"] == whole["failures"] and first["pass"] is False
    assert "offset=1" in first["next"] and "trigger=periodic" in first["next"]
    second = api_client.get(first["next"]).json()
    assert [r["category"] for r in second["rows"]] == ["Steady"] and second["next"] is None
    assert second["rows"] + first["rows"] == whole["rows"][::-1]


@pytest.mark.parametrize(
    "params, field",
    [
        ({"max_growth": "lots"}, "max_growth"),
        ({"alpha": "0"}, "alpha"),
        ({"alpha": "1"}, "alpha"),
        ({"alpha": "five"}, "alpha"),
        ({"sort": "size"}, "sort"),
        ({"dir": "up"}, "dir"),
        ({"min_delta": "5%"}, "min_delta"),
        ({"max_os_foom_rate": "101%"}, "max_os_foom_rate"),
        ({"max_os_foom_rate": "1e-3%"}, "max_os_foom_rate"),
        ({"target": ""}, "target"),
        ({"limit": "0"}, "limit"),
        ({"limit": "10001"}, "limit"),
        ({"offset": "-1"}, "offset"),
        ({"offset": "one"}, "offset"),
    ],
)
def test_compare_bad_parameters(api_client, app, builds, params, field):
    query = {"base": "1.0:1", "target": "2.0:2", **params}
    response = api_client.get(f"/api/v1/apps/{app.pk}/compare", query)
    assert response.status_code == 400
    assert field in str(response.json())


def test_compare_a_build_the_app_lacks_is_not_found(api_client, app, builds):
    """A well-formed build name (as the schema allows any) that names no build of the app:
    404, as any id not found, saying which."""
    query = {"base": "9.9:9", "target": "2.0:2"}
    response = api_client.get(f"/api/v1/apps/{app.pk}/compare", query)
    assert response.status_code == 404
    assert "no single build '9.9:9'" in response.json()["error"]


def test_memdash_check_command(app, builds, capsys):
    # 3 periodic snapshots against 3, separated: p = 0.1, not below the default alpha 0.05
    call_command("memdash_check", "--app", "com.example.chat", "--base", "1.0:1",
                 "--target", "2.0", "--trigger", "periodic")  # fmt: skip
    report = capsys.readouterr().out
    assert "FAIL" not in report and "result: PASS" in report
    assert (
        "not significant Leak: 100 Bytes -> 600 Bytes (+500 Bytes, +500.0%; p = 0.100, "
        "not below 0.05: not failed on)"
    ) in report
    with pytest.raises(SystemExit) as exit_info:
        call_command("memdash_check", "--app", "com.example.chat", "--base", "1.0:1",
                     "--target", "2.0", "--trigger", "periodic", "--alpha", "0.2")  # fmt: skip
    assert exit_info.value.code == 1
    report = capsys.readouterr().out
    assert "FAIL Leak: 100 Bytes -> 600 Bytes (+500 Bytes, +500.0%; allowed 5 Bytes" in report
    assert "where significant (rank test p < 0.2)" in report
    assert "result: FAIL (2 over the limit)" in report

    call_command("memdash_check", "--app", str(app.pk), "--base", "1.0", "--target", "2.0:2",
                 "--trigger", "periodic", "--max-growth", "1KiB")  # fmt: skip
    report = capsys.readouterr().out
    assert "result: PASS" in report and "FAIL" not in report
    assert "churn:" in report  # the churn domain's check ran too (or said it could not)

    call_command("memdash_check", "--app", "com.example.chat", "--base", "1.0:1",
                 "--target", "2.0:2", "--category", "Steady")  # fmt: skip
    assert "result: PASS" in capsys.readouterr().out


@pytest.mark.parametrize(
    "args",
    [
        ["--app", "com.example.nothing", "--base", "1.0", "--target", "2.0"],
        ["--app", "com.example.chat", "--base", "3.0", "--target", "2.0"],
        ["--app", "com.example.chat", "--base", "1.0", "--target", "2.0", "--max-growth", "x"],
        ["--app", "com.example.chat", "--base", "1.0", "--target", "2.0", "--alpha", "1.5"],
    ],
)
def test_memdash_check_usage_errors(builds, args):
    with pytest.raises(CommandError) as error:
        call_command("memdash_check", *args)
    assert error.value.returncode == 2


def test_build_refs_with_filters(api_client, app, builds):
    refs = {"base": "build:1.0:1", "target": "build:2.0:2", "app": app.pk}
    leak = api_client.get("/api/v1/diff", refs).json()["rows"][0]
    # all four snapshots of 2.0: (500 + 600 + 700 + 100000) / 4 = 25450; 1.0: 300 / 3 = 100
    assert (leak["category"], leak["base_bytes"], leak["target_bytes"]) == ("Leak", 100, 25450)
    body = api_client.get("/api/v1/diff", {**refs, "trigger": "periodic"}).json()
    leak = body["rows"][0]
    assert (leak["base_bytes"], leak["target_bytes"]) == (100, 600)  # 1800 / 3
    assert body["summary"]["target"]["snapshots"] == 3
    # the call tree of the same snapshots: main holds Leak and Steady, 1100 -> 1600 per snapshot
    roots = api_client.get("/api/v1/diff/calltree", {**refs, "trigger": "periodic"}).json()
    main = roots["nodes"][0]
    assert (main["symbol"], main["base_bytes"], main["target_bytes"]) == ("main", 1100, 1600)


# Medians and means disagree (the demo's VM: Stack): per-snapshot persistent (count, bytes)
MEDIAN_BASE = [  # 1.0 (1)
    [row("Stack", 0, None, 1, 1000), row("Steady", 0, None, 1, 100), row("Sparse", 0, None, 1, 30)],
    [row("Stack", 0, None, 1, 1000), row("Steady", 0, None, 1, 100)],
    [row("Stack", 0, None, 1, 1000), row("Steady", 0, None, 1, 100)],
]
MEDIAN_TARGET = [  # 2.0 (2)
    [row("Stack", 0, None, 1, 400), row("Steady", 0, None, 1, 100), row("Sparse", 0, None, 1, 90)],
    [row("Stack", 0, None, 1, 500), row("Steady", 0, None, 1, 100)],
    [row("Stack", 0, None, 1, 3000), row("Steady", 0, None, 1, 100)],
]


@pytest.fixture
def median_builds(upload):
    store_two_builds(upload, MEDIAN_BASE, MEDIAN_TARGET)


def test_status_needs_significance_and_follows_the_median(
    api_client, member_client, app, median_builds, capsys
):
    body = compare(api_client, app)
    rows = {r["category"]: r for r in body["rows"]}
    # Stack: 1000 x3 -> 400, 500, 3000: median 1000 -> 500 (-500), mean 1000 -> 1300 (+300).
    # U of the target is 3 (only 3000 lies above the base's three 1000s), mean 4.5: the splits
    # of ranks with U <= 3 or >= 6 are 14 of C(6, 3) = 20 -> p = 0.7. Not significant: changed
    # (before significance counted, the median made it "shrunk")
    stack = rows["Stack"]
    assert (stack["delta_median_bytes"], stack["delta_mean_bytes"]) == (-500, 300)
    assert (stack["p_value"], stack["status"]) == (pytest.approx(0.7), "changed")
    # Sparse: in one snapshot of three in each build, 30 -> 90: medians 0 and 0, the mean
    # 10 -> 30 moved; p = 1 (U = 5 of 9, mean 4.5): changed. Steady: 100 everywhere, same.
    sparse = rows["Sparse"]
    assert (sparse["delta_median_bytes"], sparse["delta_mean_bytes"]) == (0, 20)
    assert (sparse["status"], rows["Steady"]["status"]) == ("changed", "same")
    # nothing significant: the largest change of the median first, then of the mean
    assert [r["category"] for r in body["rows"]] == ["Stack", "Sparse", "Steady"]
    # whole heap: 1130, 1100, 1100 -> 590, 600, 3100: median 1100 -> 600, p = 0.6
    assert (body["total"]["delta_median_bytes"], body["total"]["status"]) == (-500, "changed")
    assert body["pass"] is True and body["failures"] == []

    # the page: the same statuses, worded; no delta coloured, as none is significant
    response = member_client.get(f"/apps/{app.pk}/compare/")
    page_rows = response.context["rows"]
    assert [(r.category, r.status) for r in page_rows] == [
        ("Stack", "changed"), ("Sparse", "changed"), ("Steady", "same"),
    ]  # fmt: skip
    html = response.content.decode()
    stack_row = html[html.index(">Stack</a></td>") :].split("</tr>")[0]
    assert '<span class="badge changed">changed, not significant</span>' in stack_row
    assert '<td class="num">-500 Bytes</td>' in stack_row
    assert '<td class="num">+300 Bytes</td>' in stack_row
    assert "grow" not in stack_row and "shrink" not in stack_row
    card = html[html.index('id="total-change"') :].split("</div></div>")[0]
    assert "-500 Bytes" in card and "grow" not in card and "shrink" not in card

    # the CI gate agrees: nothing grew by the median
    call_command("memdash_check", "--app", str(app.pk), "--base", "1.0", "--target", "2.0")
    report = capsys.readouterr().out
    # U of 590, 600, 3100 against 1100, 1100, 1130 is 3 (mean 4.5); pooled ranks 1, 2, 3.5,
    # 3.5, 5, 6: 12 of the C(6, 3) = 20 splits have a rank sum <= 9 or >= 12 -> p = 0.6
    assert "whole heap: 1.07 KiB -> 600 Bytes (-500 Bytes, p = 0.600)" in report
    assert "result: PASS" in report and "FAIL" not in report


def test_only_significant_changes_are_coloured(api_client, member_client, app, builds):
    """The diff call tree tests each node as the table tests each category (issue 34)."""
    refs = {"base": "build:1.0:1", "target": "build:2.0:2", "app": app.pk}

    def node(symbol: str, **params) -> dict:
        parent = None
        for name in ("main", "-[Feed load]", symbol):
            query = {**refs, **params, **({"node": parent} if parent else {})}
            nodes = api_client.get("/api/v1/diff/calltree", query).json()["nodes"]
            found = next(n for n in nodes if n["symbol"] == name)
            parent = found["id"]
        return found

    # -[Cache store] holds Leak: 100, 0, 200 against 500, 600, 700, 100000 per snapshot, fully
    # separated: 2 of C(7, 3) = 35 splits as extreme, p = 0.057: changed at alpha 0.05...
    cache = node("-[Cache store]")
    assert (cache["status"], cache["significant"]) == ("changed", False)
    assert cache["p_value"] == pytest.approx(2 / 35, abs=1e-6)
    # ... grown at 0.1; -[Cell init] holds Steady, 1000 in every snapshot: same, p = 1
    lenient = node("-[Cache store]", alpha="0.1")
    assert (lenient["status"], lenient["significant"]) == ("grown", True)
    cell = node("-[Cell init]", alpha="0.1")
    assert (cell["status"], cell["significant"], cell["p_value"]) == ("same", False, 1.0)
    assert api_client.get("/api/v1/diff/calltree", {**refs, "alpha": "2"}).status_code == 400

    # the page colours Leak's deltas only at the alpha that finds the change, and hands that
    # alpha to its diff tree
    page = member_client.get(f"/apps/{app.pk}/compare/").content.decode()
    leak_row = page[page.index(">Leak</a></td>") :].split("</tr>")[0]
    assert "grow" not in leak_row
    page = member_client.get(f"/apps/{app.pk}/compare/", {"alpha": "0.1"}).content.decode()
    leak_row = page[page.index(">Leak</a></td>") :].split("</tr>")[0]
    assert '<td class="num grow">+550 Bytes</td>' in leak_row
    assert '"alpha": "0.1"' in page
