"""The diff page's data-mining controls: the rules and minimums of its address reach the diff
tree's config (the JS asks the API with them), each rule a chip whose link takes it back."""

from __future__ import annotations

import json

import pytest

from tests.compare.test_diff_tree_options import builds  # noqa: F401

pytestmark = pytest.mark.django_db


def test_rules_and_minimums_in_the_page(client, member, app, builds):  # noqa: F811
    client.force_login(member)
    url = f"/apps/{app.pk}/compare/"
    params = {
        "base": "build:1.0:1", "target": "build:2.0:2", "prune_symbol": ["<b>malloc</b>", "x"],
        "min_bytes": "100",
    }  # fmt: skip
    response = client.get(url, params)
    assert response.status_code == 200
    html = response.content.decode()
    config = json.loads(
        html.split('id="difftree-config" type="application/json">')[1].split("<")[0]
    )
    assert config["filters"]["prune_symbol"] == ["<b>malloc</b>", "x"]
    assert config["filters"]["min_bytes"] == "100"
    # the chips, escaped; each link keeps the other rule
    assert "Pruned: &lt;b&gt;malloc&lt;/b&gt; ×" in html and "<b>malloc" not in html
    assert (
        'href="?base=build%3A1.0%3A1&amp;target=build%3A2.0%3A2&amp;prune_symbol=x&amp;min_bytes=100#difftree"'
        in html
    )
    # both names stay in the form that changes the other options
    assert html.count('name="prune_symbol"') == 2
    assert 'name="min_bytes" min="0" step="1" inputmode="numeric" value="100"' in html
