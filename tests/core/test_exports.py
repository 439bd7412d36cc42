"""Tables as CSV: every exported table answers the rows its page shows under the same filters
and sort (all pages of them), and a cell a spreadsheet would run as a formula stays text; and
the filters the loaded demo offers (the whole demo is loaded once for this module's tests)."""

from __future__ import annotations

import csv
import io
from html.parser import HTMLParser

import pytest
from django.test import Client
from django.urls import reverse

from memdash.allocations.models import Snapshot
from memdash.compare.reads.builds import filter_options
from memdash.core.models import Build, natural_key
from memdash.core.web.export import csv_cell, csv_response, safe_filename
from memdash.foom.logic.classify import class_label
from memdash.ingest.models import Upload
from memdash.leaks.reads import current_groups


class TableRows(HTMLParser):
    """The text of each body row's cells of the table with this id or class."""

    def __init__(self, table: str) -> None:
        super().__init__()
        self.table, self.depth, self.rows = table, 0, []
        self.in_head = False
        self.cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "table":
            names = [found.get("id") or "", *(found.get("class") or "").split()]
            if self.depth or self.table in names:
                self.depth += 1
        elif self.depth == 1:
            if tag == "thead":
                self.in_head = True
            elif tag == "tr" and not self.in_head:
                self.rows.append([])
            elif tag == "td" and self.rows and not self.in_head:
                self.cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "table" and self.depth:
            self.depth -= 1
        elif tag == "thead":
            self.in_head = False
        elif tag == "td" and self.cell is not None:
            self.rows[-1].append(" ".join("".join(self.cell).split()))
            self.cell = None

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell.append(data)


def page_rows(client: Client, url: str, table: str) -> list[list[str]]:
    response = client.get(url)
    assert response.status_code == 200, url
    parser = TableRows(table)
    parser.feed(response.content.decode())
    return [row for row in parser.rows if row]


def csv_rows(client: Client, url: str, **params: str) -> list[list[str]]:
    response = client.get(url, {**params, "format": "csv"} if "?" not in url else None)
    assert response.status_code == 200, url
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"].startswith('attachment; filename="')
    text = b"".join(response.streaming_content).decode()
    return list(csv.reader(io.StringIO(text)))[1:]


@pytest.fixture
def demo(loaded_demo, db):
    ctx = loaded_demo
    client = Client()
    client.force_login(ctx.user)
    return ctx, client


def test_cells_that_are_formulas_stay_text():
    assert csv_cell('=HYPERLINK("http://x")') == '\'=HYPERLINK("http://x")'
    for text in ("+1", "-1+2", "@SUM(A1)", "\t=1", "\r=1"):
        assert csv_cell(text) == "'" + text
    # numbers stay numbers, negative ones too; text that only contains a sign is left alone
    assert csv_cell(-1024) == -1024 and csv_cell(0.25) == 0.25
    assert csv_cell("a-b") == "a-b" and csv_cell(None) == "" and csv_cell(True) == "yes"


def test_a_csv_download_is_named_safely():
    assert safe_filename('../etc/passwd"; x=.csv') == "etc-passwd-x.csv"
    assert safe_filename("com.example.chat-8.0.4-104-foom-runs") == (
        "com.example.chat-8.0.4-104-foom-runs.csv"
    )
    assert safe_filename("") == "table.csv"
    response = csv_response("a b", ["Name"], [["=1+1"], ["ok"]])
    assert response["Content-Disposition"] == 'attachment; filename="a-b.csv"'
    assert b"".join(response.streaming_content).decode() == "Name\r\n'=1+1\r\nok\r\n"


@pytest.mark.django_db
def test_statistics_tables_under_a_search_and_sort(demo):
    ctx, client = demo
    snapshot = Snapshot.objects.filter(build=ctx.leaking_build).first()
    url = reverse("snapshots:snapshot_detail", args=[snapshot.pk])
    query = {"q": "Malloc", "sort": "category", "dir": "asc", "lifespan": "persistent"}
    shown = page_rows(client, url + "?q=Malloc&sort=category&dir=asc&lifespan=persistent",
                      "statistics")  # fmt: skip
    exported = csv_rows(client, url, **query)
    # the three summary rows, then the categories whose name has "Malloc", by name
    assert [row[0] for row in exported] == [row[0] for row in shown]
    assert [row[0] for row in exported[3:]] == [
        "Malloc 1.00 KiB", "Malloc 16.00 KiB", "Malloc 48 Bytes",
    ]  # fmt: skip
    # bytes in bytes: the page's 1.00 KiB rows are whole multiples of 1024
    assert all(int(row[1]) % 1024 == 0 for row in exported[3:5])
    assert exported[3][7]  # the responsible caller, as on the page

    build = ctx.leaking_build
    url = reverse("snapshots:build_detail", args=[ctx.app.pk, build.pk])
    shown = page_rows(client, url + "?q=VM", "statistics")
    exported = csv_rows(client, url, q="VM")
    assert [row[0] for row in exported] == [row[0] for row in shown]
    assert [row[0] for row in exported[3:]] == ["VM: CoreAnimation", "VM: ImageIO", "VM: Stack"]


@pytest.mark.django_db
def test_generations(demo):
    ctx, client = demo
    snapshot = Snapshot.objects.filter(build=ctx.leaking_build).first()
    page = client.get(reverse("snapshots:generations", args=[snapshot.pk])).content.decode()
    csv_url = reverse("snapshots:generations_csv", args=[snapshot.pk])
    assert f'href="{csv_url}"' in page
    exported = csv_rows(client, csv_url + "?")
    assert [row[0] for row in exported] == [
        "Before first mark", "Launch", "Open chat", "Scroll history", "Back",
    ]  # fmt: skip
    assert [row[1] for row in exported] == ["", "0", "4000", "12000", "20000"]


@pytest.mark.django_db
def test_foom_tables(demo):
    ctx, client = demo
    url = reverse("foom:app_foom", args=[ctx.app.pk])
    shown = page_rows(client, url, "foom-builds")
    exported = csv_rows(client, url)
    assert [row[0] for row in exported] == [row[0] for row in shown] == [str(b) for b in ctx.builds]
    assert [row[4] for row in exported] == [row[4].replace(",", "") for row in shown]  # FOOMs

    build = ctx.leaking_build
    url = reverse("foom:build_foom", args=[ctx.app.pk, build.pk])
    runs = csv_rows(client, url)  # the runs, the page's main table
    shown = page_rows(client, url, "foom-runs")
    assert len(runs) == len(shown) > 0
    assert [(r[2], r[3]) for r in runs] == [(s[1], s[2]) for s in shown]  # model, OS in order
    assert {r[8] for r in runs} <= {
        "Killed in foreground, no other cause",
        "Low memory, says the OS",
    }
    classes = csv_rows(client, url, table="classes")  # the classes' own names; the page words them
    assert [[class_label(r[0]), r[1]] for r in classes] == [
        [s[0], s[1].replace(",", "")] for s in page_rows(client, url, "foom-classes")
    ]
    categories = csv_rows(client, url, table="categories")
    assert [r[0] for r in categories] == [s[0] for s in page_rows(client, url, "foom-categories")]
    assert client.get(url, {"format": "csv", "table": "nope"}).status_code == 404


@pytest.mark.django_db
def test_cycles_leaks_churn_and_uploads(demo):
    ctx, client = demo
    app = ctx.app.pk

    url = reverse("cycles:cluster_list", args=[app])
    query = "?status=open&status=new&sort=devices"
    shown = page_rows(client, url + query, "clusters")
    exported = csv_rows(client, url + query + "&format=csv")
    assert len(exported) == len(shown) > 0
    assert [r[1] for r in exported] == [s[0].removesuffix(" regression").strip() for s in shown]
    assert [r[7] for r in exported] == [s[4] for s in shown]  # devices, the sort

    url = reverse("leaks:group_list", args=[app])
    shown = page_rows(client, url + "?status=all&sort=bytes", "leak-groups")
    exported = csv_rows(client, url, status="all", sort="bytes")
    assert len(exported) == len(shown) == 5  # 4 of the leak logs, 1 of Xcode's leaks
    # the page's first cell: the title (cut at 120 characters), its badges and top frames
    assert all(s[0].startswith(r[1][:100]) for r, s in zip(exported, shown, strict=True))
    assert [int(r[7]) for r in exported] == sorted((int(r[7]) for r in exported), reverse=True)
    # one status, in the page's default order (last seen first)
    shown = page_rows(client, url + "?status=open", "leak-groups")
    exported = csv_rows(client, url, status="open")
    assert [r[0] for r in exported] == [
        str(g.pk) for g in current_groups(ctx.app).filter(status="open")
        .order_by("-last_seen_at", "-id")
    ]  # fmt: skip
    assert len(exported) == len(shown) == 2

    url = reverse("churn:app_churn", args=[app])
    build = Build.objects.get(pk=ctx.leaking_build.pk)
    shown = page_rows(client, url + f"?build={build.pk}", "churn-ranking")
    exported = csv_rows(client, url, build=str(build.pk))
    assert [r[0] for r in exported] == [s[0] for s in shown] and exported

    url = reverse("ingest:upload_list", args=[app])
    shown = page_rows(client, url, "uploads")
    exported = csv_rows(client, url)
    # the page's first 50, newest first, then every other page of them
    assert [f"#{r[0]}" for r in exported[: len(shown)]] == [s[0] for s in shown] and exported
    assert len(exported) == Upload.objects.filter(app=ctx.app).count()
    assert all(r[7].isdigit() for r in exported)  # sizes in bytes


@pytest.mark.django_db
def test_loaded_demo_offers_each_os_once_in_order(loaded_demo):
    ctx = loaded_demo
    oses = filter_options(ctx.app)["oses"]
    assert not [os for os in oses if not os[0].isdigit()]  # no "iOS 17.4.1" next to "17.4.1"
    assert set(oses) == set(Snapshot.objects.filter(app=ctx.app).values_list("os", flat=True))
    assert oses == sorted(oses, key=natural_key)
    assert oses.index("16.7.2") < oses.index("16.7.10")  # both in the demo: FOOM's OS updates
