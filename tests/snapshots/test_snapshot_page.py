"""The snapshot page: its generation buttons, the Responsible Caller column (whole snapshot
only) and generations the snapshot does not have."""

from __future__ import annotations

import re

import pytest

from tests.samples import spec_example

pytestmark = pytest.mark.django_db


@pytest.fixture
def snapshot_id(upload) -> int:
    body = upload(spec_example()).json()  # generations 0 Launch and 1 Open chat
    assert body["status"] == "done", body
    return body["snapshot"]["id"]


def page(member_client, snapshot_id: int, query: str = ""):
    return member_client.get(f"/snapshots/{snapshot_id}/{query}")


def test_responsible_caller_only_for_the_whole_snapshot(member_client, snapshot_id):
    html = page(member_client, snapshot_id).content.decode()
    assert "<th>Responsible Caller</th>" in html
    # MessageCell's rows all have stack 3, whose innermost frame is the app's own
    assert '<td class="mono">-[MessageCell initWithStyle:]</td>' in html
    for query in ("?generation=1", "?generation=baseline", "?generation=0&lifespan=persistent"):
        response = page(member_client, snapshot_id, query)
        assert response.status_code == 200
        html = response.content.decode()
        assert "Responsible Caller" not in html and '<td class="mono">' not in html, query
    # generation 1 holds MessageCell and VM: CoreAnimation; the header and rows stay aligned:
    # 6 figures and the bar, 7 cells a row
    html = page(member_client, snapshot_id, "?generation=1").content.decode()
    table = html[html.index('id="statistics"') :].split("</table>")[0]
    assert len(re.findall(r"<th[ >]", table)) == 7
    for name in ("MessageCell", "VM: CoreAnimation"):
        row = table[table.index(f">{name}</a>") :].split("</tr>")[0]
        assert row.count("<td") == 6  # and the name's own cell before it: 7


def test_a_generation_the_snapshot_does_not_have_is_a_404(member_client, snapshot_id):
    assert page(member_client, snapshot_id, "?generation=1").status_code == 200
    for query in ("?generation=2", "?generation=99", "?generation=-1", "?generation=x"):
        assert page(member_client, snapshot_id, query).status_code == 404, query


def test_generation_buttons_are_one_segmented_control(member_client, snapshot_id):
    html = page(member_client, snapshot_id).content.decode()
    control = html[html.index("Generation: <span") :].split("</span>")[0]
    labels = re.findall(r">([^<>]+)</a>", control)
    assert labels == ["All", "Before first mark", "Launch", "Open chat"]
    # no text (a space would be a gap) between two buttons, only a line-break opportunity
    assert control.count("</a><wbr><a") == 3 and not re.search(r"</a>\s+<", control)
