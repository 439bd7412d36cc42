"""Owner suggestion from a real local git checkout (configured as a server setting)."""

from __future__ import annotations

import subprocess

import pytest

from memdash.cycles.models import Cluster
from memdash.cycles.reads.owners import defining_files, owner_suggestion_for, suggest_owners
from tests.cycles.helpers import builds, store

BLOCK = ("__NSMallocBlock__", ("_onUpdate",))


def git(repo, *args, author=None):
    env = {"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_SYSTEM": "/dev/null", "HOME": str(repo)}
    if author:
        name, email = author
        env |= {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email,
                "GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email}  # fmt: skip
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=env)


@pytest.fixture
def checkout(tmp_path):
    repo = tmp_path / "chat-ios"
    (repo / "Chat").mkdir(parents=True)
    git(repo, "init", "-q")
    (repo / "Chat" / "ChatViewController.h").write_text(
        "@interface ChatViewController : UIViewController\n@end\n"
    )
    (repo / "Chat" / "ChatViewController.m").write_text(
        '#import "ChatViewController.h"\n@interface ChatViewController ()\n@end\n'
        "@implementation ChatViewController\n@end\n"
    )
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "controller", author=("Ana Lopez", "ana@example.com"))
    (repo / "Chat" / "ChatDataSource.swift").write_text(
        "import UIKit\n\nfinal class ChatDataSource: NSObject {\n  var onUpdate: (() -> Void)?\n}\n"
    )
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "data source", author=("Bo Chen", "bo@example.com"))
    # A later edit of the header only: the .m file still says who owns the implementation.
    (repo / "Chat" / "ChatViewController.h").write_text(
        "@interface ChatViewController : UIViewController\n// x\n@end\n"
    )
    git(repo, "commit", "-q", "-am", "header", author=("Cy Diaz", "cy@example.com"))
    return repo


def test_defining_files_prefer_the_implementation(checkout):
    files = defining_files(checkout, ["ChatViewController", "ChatDataSource", "Missing"])
    assert files == {
        "ChatViewController": "Chat/ChatViewController.m",
        "ChatDataSource": "Chat/ChatDataSource.swift",
    }


def test_last_authors_and_suggestion(checkout):
    suggestion = suggest_owners(checkout, ["ChatDataSource", "ChatViewController", "Missing"])
    by_class = {o.class_name: (o.file, o.author, o.email) for o in suggestion.classes}
    assert by_class == {
        "ChatDataSource": ("Chat/ChatDataSource.swift", "Bo Chen", "bo@example.com"),
        "ChatViewController": ("Chat/ChatViewController.m", "Ana Lopez", "ana@example.com"),
        "Missing": (None, None, None),
    }
    # One file each: the tie goes to the first class in the key.
    assert suggestion.suggested == "Bo Chen <bo@example.com>"


@pytest.mark.django_db
def test_detail_page_shows_the_owner_only_with_a_configured_checkout(
    member_client, app, settings, checkout
):
    (b1,) = builds(app, 1)
    store(app, b1, [(("ChatViewController", ()), ("ChatDataSource", ("_dataSource",)), BLOCK)])
    cluster = Cluster.objects.get()
    assert b"Suggested owner" not in member_client.get(cluster.get_absolute_url()).content
    settings.MEMDASH_SOURCE_CHECKOUTS = {app.bundle_id: str(checkout)}
    page = member_client.get(cluster.get_absolute_url()).content.decode()
    assert "Suggested owner" in page and "Bo Chen &lt;bo@example.com&gt;" in page
    assert "Chat/ChatViewController.m" in page


def test_no_checkout_no_suggestion(settings, tmp_path):
    settings.MEMDASH_SOURCE_CHECKOUTS = {"com.example.chat": str(tmp_path / "not-a-repo")}
    assert owner_suggestion_for("com.example.chat", ["A"]) is None
    assert owner_suggestion_for("com.unknown", ["A"]) is None
