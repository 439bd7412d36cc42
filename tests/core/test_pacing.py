"""`core.logic.pacing`: work a process does at most every so often, told apart by name."""

from __future__ import annotations

from memdash.core.logic import pacing


def test_a_name_is_due_once_per_interval_and_names_are_apart(monkeypatch):
    clock = iter([100.0, 100.5, 100.6, 101.0, 102.5])
    monkeypatch.setattr(pacing.time, "monotonic", lambda: next(clock))
    assert pacing.due("look", 2.0)  # 100.0: never done
    assert not pacing.due("look", 2.0)  # 100.5: done 0.5 s ago
    assert pacing.due("summary", 2.0)  # 100.6: another name
    assert not pacing.due("look", 2.0)  # 101.0: 1 s ago
    assert pacing.due("look", 2.0)  # 102.5: 2.5 s ago


def test_forget_is_a_new_process(monkeypatch):
    monkeypatch.setattr(pacing.time, "monotonic", lambda: 50.0)
    assert pacing.due("look", 10.0)
    assert not pacing.due("look", 10.0)
    pacing.forget()
    assert pacing.due("look", 10.0)
