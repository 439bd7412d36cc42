"""LeakCanary's analyses read as plain data (no database): each sample's figures as LeakCanary
printed them, Logcat's prefixes, and every malformed input refused at its line."""

from __future__ import annotations

from pathlib import Path

import pytest

from memdash.core.logic.errors import InvalidUpload
from memdash.leaks.logic.chain import ChainObject, draw_chain, simple_name
from memdash.leaks.logic.parsers import leakcanary

SAMPLES = Path(__file__).resolve().parents[1] / "data" / "leakcanary"


def parsed(name: str) -> leakcanary.LeakCanaryText:
    return leakcanary.parse((SAMPLES / name).read_bytes())


def test_one_leak_of_two_traces_with_two_likely_causes():
    (analysis,) = parsed("SingleApplicationLeakAnalyzeCmd.txt").analyses
    assert analysis.stated == {"application": 1, "library": 0, "unreachable": 0}
    assert analysis.metadata["LeakCanary version"] == "2.11"
    assert analysis.metadata["Heap dump timestamp"] == "1716181171176"
    (leak,) = analysis.leaks
    assert leak.category == "application"
    assert leak.signature == "442f3a7295abb8db4c32672ff17a43941effe5d0"
    assert (leak.retained_bytes, leak.traces) == (44730, 2)
    assert leak.gc_root == "Input or output parameters in native code"
    assert [o.cls.rsplit(".", 1)[-1] for o in leak.objects] == [
        "MessageQueue", "Message", "FragmentHostActivity$1", "FragmentHostActivity",
        "Fragment[]", "FragmentA",
    ]  # fmt: skip
    assert [o.verdict for o in leak.objects] == ["NO", "NO", "NO", "NO", "UNKNOWN", "YES"]
    assert leak.suspects == ["FragmentHostActivity.fragments", "Fragment[0]"]
    array, leaking = leak.objects[-2:]
    assert (array.type, array.retained, array.retained_objects) == ("array", "2.1 kB", 69)
    assert array.retained_bytes == 2100  # LeakCanary's kB is 1000 bytes
    assert leaking.reference == "" and leaking.retained_objects == 756
    assert leaking.reason.startswith("ObjectWatcher was watching this because")
    assert leaking.reason.endswith("Conflicts with Fragment.mLifecycleRegistry.state is RESUMED")
    assert "key = f349accc-be6b-4f1d-b560-f2e0942a468f" in leaking.labels
    assert leak.objects[0].labels == ['HandlerThread: "main"']
    assert leak.title == "FragmentA via FragmentHostActivity.fragments"


def test_two_leaks_and_the_boilerplate_left_out():
    (analysis,) = parsed("MultiApplicationLeak.txt").analyses
    first, second = analysis.leaks
    assert (first.signature, first.retained_bytes, first.traces) == (
        "41c3c2258578581a1b0c9f78b59966266ed118b9",
        2228,
        1,
    )
    assert (second.signature, second.retained_bytes, second.traces) == (
        "2d8918c3076020f19fa7ab4b6ca5cb4423772b20",
        8928,
        4,
    )
    assert first.suspects == ["AppsListFragment.rootView"]
    assert second.suspects == ["TabFragment.rootView"]
    assert len(first.objects) == 9 and first.leaking is not None
    assert first.leaking.retained == "2.2 kB" and first.leaking.retained_objects == 43
    assert analysis.unreachable == []  # only LeakCanary's explanation under the heading
    assert analysis.metadata["Db 1"].startswith("open /data/user/0/com.amaze.filemanager.debug")


def test_five_leaks_with_reasons_wrapped_by_logcat():
    (analysis,) = parsed("ServiceLeak.txt").analyses
    assert analysis.stated["application"] == 5 and len(analysis.leaks) == 5
    assert {leak.retained_bytes for leak in analysis.leaks} == {1659}
    leaking = analysis.leaks[0].leaking
    assert leaking is not None
    # `Leaking: YES (… received` / `Service#onDestroy() callback and … ActivityThread)`
    assert leaking.reason == (
        "ObjectWatcher was watching this because com.example.memoryleaksample.LeakingService1 "
        "received Service#onDestroy() callback and Service not held by ActivityThread"
    )
    assert leaking.labels[0] == "key = 4b1089d0-01b1-4c9a-b269-3cc66c8c440b"
    assert analysis.metadata["LeakCanary version"] == "2.12"


def test_a_logcat_dump_with_a_library_leak():
    (analysis,) = parsed("handwritten_logcat_app_and_library.txt").analyses
    app_leak, library = analysis.leaks
    assert (app_leak.category, app_leak.retained_bytes) == ("application", 36812)
    assert app_leak.gc_root == "System class"
    assert app_leak.suspects == ["static ChatRepository.listeners", "ArrayList[0]"]
    assert library.category == "library"
    assert library.pattern == "instance field android.app.Activity$1#this$0"
    assert library.description.startswith("Android Q added a new")
    assert library.description.endswith("causing the activity to leak.")
    assert (library.signature, library.retained_bytes) == (
        "7573873eb76c9b7e8963efe04194842e7e15c8b9",
        84365,
    )
    assert library.objects[0].labels[0] == (
        "Library leak match: instance field android.app.Activity$1#this$0"
    )
    assert analysis.metadata["App process name"] == "com.example.chat"


def test_many_analyses_in_one_upload():
    raw = b"\n".join(
        (SAMPLES / name).read_bytes()
        for name in ("MultiApplicationLeak.txt", "SingleApplicationLeakAnalyzeCmd.txt")
    )
    result = leakcanary.parse(raw)
    assert [len(a.leaks) for a in result.analyses] == [2, 1]


def test_a_failed_analysis_is_counted_not_read():
    failed = b"====================================\nHEAP ANALYSIS FAILED\n\nboom\n"
    result = leakcanary.parse(failed + (SAMPLES / "MultiApplicationLeak.txt").read_bytes())
    assert result.failed == 1 and len(result.analyses) == 1
    with pytest.raises(InvalidUpload, match="only failed analyses"):
        leakcanary.parse(failed)


SINGLE = (SAMPLES / "SingleApplicationLeakAnalyzeCmd.txt").read_text()


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        # cut inside the trace (its last line read: 36)
        ("\n".join(SINGLE.splitlines()[:36]), 36, "cut off before its leaking object"),
        # the trace ends before its leaking object, at the next rule
        ("\n".join(SINGLE.splitlines()[:40]) + "\n====================================\n",
         41, "cut off before its leaking object"),
        # the heading announces 2 leaks, 1 follows
        (SINGLE.replace("1 APPLICATION LEAKS", "2 APPLICATION LEAKS"), 4,
         "announces 2 application leaks, 1 follow"),
        (SINGLE.replace("Signature: 442f3a7295abb8db4c32672ff17a43941effe5d0\n", ""), 11,
         "follows its `Signature:` line"),
        (SINGLE.replace("│    ↓ Fragment[0]\n", ""), 40, "underline with no reference"),
        ("╰→ com.example.Leaky instance\n", 1, "trace line without its leak"),
    ],
)  # fmt: skip
def test_malformed_analyses_are_refused_at_their_line(text: str, line: int, words: str):
    with pytest.raises(InvalidUpload) as caught:
        leakcanary.parse(text.encode())
    assert caught.value.path == f"line {line}", caught.value.message
    assert words in caught.value.message


def test_the_trace_drawn_as_a_column_with_its_likely_causes_marked():
    (leak,) = parsed("SingleApplicationLeakAnalyzeCmd.txt").analyses[0].leaks
    objects = [ChainObject(o.cls, o.type, o.verdict, o.reference, o.suspect) for o in leak.objects]
    drawing = draw_chain(leak.gc_root, objects)
    assert drawing.root_label == "GC root: Input or output parameters in native code"
    assert [box.label for box in drawing.boxes][-2:] == ["Fragment[] array", "FragmentA instance"]
    assert [box.verdict for box in drawing.boxes][-1] == "YES"
    # 6 objects, 5 references between them; the last two are the underlined ones
    assert len(drawing.arrows) == 5
    assert [a.suspect for a in drawing.arrows] == [False, False, False, True, True]
    assert drawing.arrows[-1].label == "✂ Fragment[0]"
    ys = [box.y for box in drawing.boxes]
    assert ys == sorted(ys) and all(a.y1 < a.y2 for a in drawing.arrows)
    assert all(box.x >= 0 and box.x + box.width <= drawing.width for box in drawing.boxes)
    assert simple_name("java.lang.Object[]") == "Object[]"
