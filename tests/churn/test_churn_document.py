"""The memdash.churn v1 validator: both scenario shapes, and a JSON path for every refusal."""

import copy

import pytest

from memdash.churn.logic.cost import DEFAULT_WEIGHTS, FunctionSums, churn_of_sums
from memdash.churn.logic.document import validate_churn_document
from memdash.core.logic.errors import InvalidUpload

DOC = {
    "format": "memdash.churn",
    "version": 1,
    "app": {"id": "com.example.chat", "platform": "ios"},
    "build": {"version": "8.0.4", "number": "104"},
    "device": {"id": "ci-1", "model": "iPhone13,2"},
    "captured_at": "2026-11-20T10:12:03+00:00",
    "runs": [
        {
            "id": "run-1",
            "scenarios": [
                {
                    "name": "open_chat",
                    "thread": "main",
                    "start_marker": "openChat.begin",
                    "end_marker": "openChat.end",
                    "elapsed_ms": 412.5,
                    "calls": [["malloc", 64], ["realloc", 256], ["free", 64], ["malloc", 0]],
                },
                {
                    "name": "send_message",
                    "elapsed_ms": 88,
                    "functions": {"calloc": {"count": 2, "bytes": 64, "log2_bytes": 10.0}},
                },
            ],
        }
    ],
}


def test_valid_document_in_both_shapes():
    parsed = validate_churn_document(DOC)
    assert (parsed.build_version, parsed.build_number, parsed.device_id) == ("8.0.4", "104", "ci-1")
    (run,) = parsed.runs
    open_chat, send = run.scenarios
    assert open_chat.sent_calls and not send.sent_calls
    assert open_chat.calls == 4
    assert open_chat.functions["malloc"] == FunctionSums(2, 64, 6.0)
    # open_chat: malloc 6 + realloc 3 · 8 + free 6 + malloc 0 = 36
    assert churn_of_sums(open_chat.functions, DEFAULT_WEIGHTS) == 36
    # send_message: calloc 2 · 10 = 20
    assert churn_of_sums(send.functions, DEFAULT_WEIGHTS) == 20
    assert open_chat.elapsed_ms == 412.5 and open_chat.thread == "main"


def with_change(change):
    doc = copy.deepcopy(DOC)
    change(doc)
    return doc


def scenario(doc, index=0):
    return doc["runs"][0]["scenarios"][index]


@pytest.mark.parametrize(
    ("change", "path"),
    [
        (lambda d: d.update(version=2), "version"),
        (lambda d: d.update(version=True), "version"),
        (lambda d: d.pop("app"), "app"),
        (lambda d: d.update(runs=[]), "runs"),
        (lambda d: d["build"].pop("version"), "build.version"),
        (lambda d: d.update(captured_at="2026-11-20T10:12:03"), "captured_at"),
        (lambda d: d["runs"].append(copy.deepcopy(d["runs"][0])), "runs[1].id"),
        (lambda d: d["runs"][0].update(scenarios=[]), "runs[0].scenarios"),
        (lambda d: scenario(d).pop("name"), "runs[0].scenarios[0].name"),
        (lambda d: scenario(d).update(elapsed_ms=-1), "runs[0].scenarios[0].elapsed_ms"),
        (lambda d: scenario(d).update(elapsed_ms="5"), "runs[0].scenarios[0].elapsed_ms"),
        (lambda d: scenario(d).pop("elapsed_ms"), "runs[0].scenarios[0].elapsed_ms"),
        (lambda d: scenario(d).pop("calls"), "runs[0].scenarios[0]"),
        (lambda d: scenario(d).update(functions={}), "runs[0].scenarios[0]"),
        (lambda d: scenario(d)["calls"].append(["malloc"]), "runs[0].scenarios[0].calls[4]"),
        (lambda d: scenario(d)["calls"].append([7, 8]), "runs[0].scenarios[0].calls[4][0]"),
        (
            lambda d: scenario(d)["calls"].append(["malloc", -8]),
            "runs[0].scenarios[0].calls[4][1]",
        ),
        (
            lambda d: scenario(d)["calls"].append(["malloc", 8.5]),
            "runs[0].scenarios[0].calls[4][1]",
        ),
        (
            lambda d: scenario(d, 1)["functions"]["calloc"].update(count=-1),
            "runs[0].scenarios[1].functions.calloc.count",
        ),
        (
            # 2 calls of 64 bytes in all have at most 2 · log2 32 = 10
            lambda d: scenario(d, 1)["functions"]["calloc"].update(log2_bytes=10.5),
            "runs[0].scenarios[1].functions.calloc.log2_bytes",
        ),
        (
            lambda d: scenario(d, 1)["functions"].update(free={"count": 0, "bytes": 8}),
            "runs[0].scenarios[1].functions.free.log2_bytes",
        ),
        (
            lambda d: d["runs"][0]["scenarios"].append(copy.deepcopy(scenario(d))),
            "runs[0].scenarios[2].name",
        ),
    ],
)
def test_refusals_name_the_path(change, path):
    with pytest.raises(InvalidUpload) as error:
        validate_churn_document(with_change(change))
    assert error.value.path == path


def test_zero_count_needs_zero_bytes():
    doc = with_change(
        lambda d: scenario(d, 1)["functions"].update(free={"count": 0, "bytes": 8, "log2_bytes": 0})
    )
    with pytest.raises(InvalidUpload) as error:
        validate_churn_document(doc)
    assert error.value.path == "runs[0].scenarios[1].functions.free"


def test_build_may_come_beside_the_document():
    parsed = validate_churn_document(with_change(lambda d: d.pop("build")))
    assert parsed.build_version == ""
