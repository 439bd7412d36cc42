"""The site's demo loader finds each installed app's part of the story (its `demo` module)
instead of importing it, so that the site never imports ingest, its sibling on the top floor."""

from __future__ import annotations

from memdash.allocations import demo as allocations_demo
from memdash.foom import demo as foom_demo
from memdash.ingest.demo import (
    debug_files as demo_symbols,
)
from memdash.ingest.demo import (
    leak_tools as demo_leak_tools,
)
from memdash.ingest.demo import (
    matrix as demo_matrix,
)
from memdash.ingest.demo import (
    os_exits as demo_os,
)
from memdash.site.demo import ORDER, demo_parts


def test_every_part_of_the_story_is_found_in_its_place():
    parts = demo_parts()
    # Every app that tells a part is installed in the tests, so every place in ORDER is filled.
    assert [name for name, _ in parts] == ORDER
    found = dict(parts)
    # An app with one part gives `load` (named by its label), ingest gives four by name.
    assert found["allocations"] is allocations_demo.load
    assert found["foom"] is foom_demo.load
    assert found["matrix report"] is demo_matrix.load
    assert found["debug files"] is demo_symbols.load
    assert found["os exits"] is demo_os.load
    assert found["leak tools"] is demo_leak_tools.load
