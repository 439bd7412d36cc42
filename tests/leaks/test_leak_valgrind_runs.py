"""valgrind 3.19 text logs of two runs no other file shows (tests/data/PROVENANCE.md): leak checks
the program asks for itself (VALGRIND_DO_LEAK_CHECK, then VALGRIND_DO_ADDED_LEAK_CHECK, whose
records and summary carry `(+N)` differences), and a parent with its exec'd child under
`--trace-children=yes`. Each expected figure is copied from the log's own lines, quoted beside
it."""

from pathlib import Path

from memdash.leaks.logic.parsers import detect_tool, parse_leak_log
from memdash.leaks.logic.reports import DIRECT, REACHABLE

SAMPLES = Path(__file__).resolve().parents[1] / "data" / "leaks"


def log_of(name: str):
    raw = (SAMPLES / name).read_bytes()
    assert detect_tool(raw) == "valgrind-log"
    return parse_leak_log(raw)


def test_each_leak_check_is_a_report_with_its_added_records():
    first, added, at_exit = log_of("valgrind-3.19_added_leak_check.txt").reports
    assert first.process == added.process == at_exit.process == "pid 22175"
    # VALGRIND_DO_LEAK_CHECK: "100 bytes in 1 blocks are definitely lost in loss record 1 of 1";
    # LEAK SUMMARY "definitely lost: 100 bytes in 1 blocks"
    assert first.stated_kinds[DIRECT] == (100, 1)
    assert [(r.kind, r.bytes, r.allocations) for r in first.records] == [(DIRECT, 100, 1)]
    # VALGRIND_DO_ADDED_LEAK_CHECK lists what changed: "30 (+30) bytes in 1 (+1) blocks are
    # still reachable", "50 (+50) bytes in 1 (+1) blocks are definitely lost"; its LEAK SUMMARY
    # "definitely lost: 150 (+50) bytes in 2 (+1) blocks", "still reachable: 30 (+30) bytes in
    # 1 (+1) blocks": the totals, not the differences. The 100 bytes are counted, not listed.
    assert added.stated_kinds[DIRECT] == (150, 2)
    assert added.stated_kinds[REACHABLE] == (30, 1)
    assert [(r.kind, r.bytes) for r in added.records] == [(REACHABLE, 30), (DIRECT, 50)]
    # At exit: "30 bytes … definitely lost in loss record 2 of 4", 50 (3 of 4), 100 (4 of 4);
    # "definitely lost: 180 bytes in 3 blocks"; "ERROR SUMMARY: 5 errors"
    assert at_exit.stated_kinds[DIRECT] == (180, 3)
    assert sorted(r.bytes for r in at_exit.records) == [30, 50, 100]
    assert at_exit.info["errors"] == 5
    # HEAP SUMMARY "in use at exit: 180 bytes in 3 blocks"
    assert at_exit.info["heap_summary"]["in_use_bytes"] == 180


def test_traced_children_are_reports_of_their_own():
    parent, child = sorted(
        log_of("valgrind-3.19_trace_children.txt").reports, key=lambda r: r.process
    )
    # ==22722== Command: ./parent_child — "64 bytes in 1 blocks are definitely lost";
    # ==22757== Command: ./parent_child child — "24 bytes in 1 blocks are definitely lost"
    assert (parent.process, parent.info["command"]) == ("pid 22722", "./parent_child")
    assert (child.process, child.info["command"]) == ("pid 22757", "./parent_child child")
    assert parent.stated_kinds[DIRECT] == (64, 1)
    assert child.stated_kinds[DIRECT] == (24, 1)
    assert [f.symbol for f in child.records[0].frames] == ["malloc", "lose", "main"]
    # each its own HEAP SUMMARY: "in use at exit: 24 bytes in 1 blocks" for the child
    assert child.info["heap_summary"]["in_use_bytes"] == 24
