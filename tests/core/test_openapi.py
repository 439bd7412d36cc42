"""The OpenAPI document says what the API answers: list answers are arrays, the upload door
takes the ingest key's Bearer scheme, each error status a view answers is documented with the
error body, and parameters carry their bounds, enums and accepted words. Each property is
checked in the document and, where a view can show it, against what the view answers."""

from __future__ import annotations

import re
from typing import Any

import jsonschema
import pytest
from drf_spectacular.generators import SchemaGenerator

from memdash.allocations.logic.calltree.flame import FLAME_LIMIT
from memdash.core.logic.flags import NO, YES, read_flag
from memdash.core.logic.numbers import MAX_INT32, whole_number
from memdash.core.web.api import MAX_OFFSET
from memdash.core.web.schema import number_pattern
from memdash.core.writes import apps as core_services

API = "/api/v1"


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    schema: dict[str, Any] = SchemaGenerator().get_schema(request=None, public=True)
    return schema


def operation(document: dict[str, Any], method: str, path: str) -> dict[str, Any]:
    op: dict[str, Any] = document["paths"][path][method]
    return op


def as_json_schema(schema: Any) -> Any:
    """OpenAPI 3.0's `nullable` spelt as JSON Schema (`type: [..., "null"]`), recursively."""
    if isinstance(schema, list):
        return [as_json_schema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: as_json_schema(v) for k, v in schema.items() if k != "nullable"}
    if schema.get("nullable"):
        out = {"anyOf": [out, {"type": "null"}]}
    return out


def body_schema(document: dict[str, Any], method: str, path: str, status: int) -> Any:
    response = operation(document, method, path)["responses"][str(status)]
    return as_json_schema(response["content"]["application/json"]["schema"])


def check_answer(document: dict[str, Any], method: str, path: str, response: Any) -> None:
    """The view's answer is one the document lists, with a body that its schema admits."""
    assert str(response.status_code) in operation(document, method, path)["responses"]
    jsonschema.validate(response.json(), body_schema(document, method, path, response.status_code))


def parameter(document: dict[str, Any], method: str, path: str, name: str) -> dict[str, Any]:
    found = [p for p in operation(document, method, path)["parameters"] if p["name"] == name]
    assert len(found) == 1, name
    return found[0]


@pytest.mark.parametrize(
    "path",
    [
        "/apps",
        "/apps/{app_id}/builds",
        "/snapshots/{snapshot_id}/generations",
        "/apps/{app_id}/foom",
        "/apps/{app_id}/foom/os",
    ],
)
def test_list_answers_are_arrays_of_objects(document, path):
    schema = body_schema(document, "get", API + path, 200)
    assert schema["type"] == "array"
    assert schema["items"]["type"] == "object" and schema["items"]["required"]


def test_list_answers_match_what_the_views_answer(document, api_client, app):
    core_services.get_or_create_build(app, "8.0.4", "104")
    for path, url in [
        ("/apps", "/apps"),
        ("/apps/{app_id}/builds", f"/apps/{app.pk}/builds"),
        ("/apps/{app_id}/foom", f"/apps/{app.pk}/foom"),
        ("/apps/{app_id}/foom/os", f"/apps/{app.pk}/foom/os"),
    ]:
        response = api_client.get(API + url)
        assert response.status_code == 200
        assert isinstance(response.json(), list)
        check_answer(document, "get", API + path, response)
    apps = api_client.get(f"{API}/apps").json()
    assert [a["bundle_id"] for a in apps] == ["com.example.chat"]
    builds = api_client.get(f"{API}/apps/{app.pk}/builds").json()
    assert [(b["version"], b["number"], b["snapshots"]) for b in builds] == [("8.0.4", "104", 0)]


def test_the_upload_doors_declare_the_ingest_key_bearer_scheme(document, client, app):
    schemes = document["components"]["securitySchemes"]
    assert schemes["ingestKey"] == {
        "type": "http",
        "scheme": "bearer",
        "description": "`Bearer <ingest key>`: an app's ingest key",
    }
    assert schemes["apiToken"]["in"] == "header" and schemes["apiToken"]["name"] == "Authorization"
    doors = [("post", f"{API}/uploads"), ("post", f"{API}/apps/{{app_id}}/debug-files")]
    for method, path in doors:
        assert operation(document, method, path)["security"] == [{"ingestKey": []}]
    # the dashboard's reads: a personal token or a session
    reads = operation(document, "get", f"{API}/apps/{{app_id}}/cycles")["security"]
    assert reads == [{"apiToken": []}, {"cookieAuth": []}]
    # without a key the upload door answers the documented 401, asking for the Bearer scheme
    response = client.post(f"{API}/uploads", b"{}", content_type="application/json")
    assert response.status_code == 401 and response["WWW-Authenticate"] == "Bearer"
    check_answer(document, "post", f"{API}/uploads", response)
    response = client.post(
        f"{API}/apps/{app.pk}/debug-files", b"x", content_type="application/octet-stream"
    )
    assert response.status_code == 401
    check_answer(document, "post", f"{API}/apps/{{app_id}}/debug-files", response)


def test_the_error_statuses_a_view_answers_are_documented_with_the_error_body(
    document, client, api_client, app
):
    path = f"{API}/apps/{{app_id}}/cycles"
    responses = operation(document, "get", path)["responses"]
    assert {"200", "400", "401", "404", "429"} <= set(responses)
    for status in (400, 401, 404, 429):
        assert body_schema(document, "get", path, status)["required"] == ["error"]
    answers = {
        400: api_client.get(f"{API}/apps/{app.pk}/cycles", {"limit": 0}),
        401: client.get(f"{API}/apps/{app.pk}/cycles"),
        404: api_client.get(f"{API}/apps/{app.pk + 1000}/cycles"),
    }
    for status, response in answers.items():
        assert response.status_code == status
        check_answer(document, "get", path, response)
    assert answers[400].json() == {
        "error": "invalid request",
        "fields": {"limit": "must be between 1 and 1000"},
    }
    # an operation that reads no parameter answers no 400; a PATCH adds 403 (viewer, CSRF)
    assert "400" not in operation(document, "get", f"{API}/apps/{{app_id}}/churn")["responses"]
    assert "403" in operation(document, "patch", f"{API}/cycles/{{cluster_id}}")["responses"]


def test_a_path_no_route_matches_answers_the_api_404(document, api_client):
    response = api_client.get(f"{API}/apps/-1/builds")
    assert response.status_code == 404
    assert response.json() == {"error": "No such API path."}
    check_answer(document, "get", f"{API}/apps/{{app_id}}/builds", response)
    schema = parameter(document, "get", f"{API}/apps/{{app_id}}/builds", "app_id")["schema"]
    assert schema == {"type": "integer", "format": "int64", "minimum": 1, "maximum": 2**63 - 1}


def test_parameter_bounds_and_enums(document):
    def schema(path: str, name: str) -> dict[str, Any]:
        found: dict[str, Any] = parameter(document, "get", API + path, name)["schema"]
        return found

    assert schema("/apps/{app_id}/cycles", "limit") == {
        "type": "integer",
        "minimum": 1,
        "maximum": 1000,
    }
    assert schema("/apps/{app_id}/cycles", "offset")["maximum"] == MAX_OFFSET
    assert schema("/snapshots/{snapshot_id}/statistics", "limit")["maximum"] == 10_000
    flame = schema("/snapshots/{snapshot_id}/calltree/flame", "limit")
    assert (flame["minimum"], flame["maximum"]) == (50, FLAME_LIMIT)
    assert schema("/snapshots/{snapshot_id}/statistics", "lifespan")["enum"] == [
        "all",
        "persistent",
        "transient",
    ]
    assert schema("/diff", "lifespan")["enum"] == ["all", "persistent", "transient"]
    assert schema("/snapshots/{snapshot_id}/calltree", "charge")["maxItems"] == 20
    assert schema("/snapshots/{snapshot_id}/calltree", "search")["maxLength"] == 200
    # an empty value reads as an absent one; a required one may not be empty
    limit = parameter(document, "get", f"{API}/apps/{{app_id}}/cycles", "limit")
    assert limit["allowEmptyValue"] is True
    base = parameter(document, "get", f"{API}/diff", "base")
    assert base["required"] is True and "allowEmptyValue" not in base


def test_yes_no_parameters_take_the_words_the_views_read(document, api_client, app):
    pattern = parameter(document, "get", f"{API}/apps/{{app_id}}/cycles", "include_system")
    regex = re.compile(pattern["schema"]["pattern"])
    words = [*YES, *NO, "TRUE", " Off ", "maybe", "2", "yess", "tru", "-1"]
    for word in words:
        assert bool(regex.match(word)) == (read_flag(word, False) is not None), word
    url = f"{API}/apps/{app.pk}/cycles"
    assert api_client.get(url, {"include_system": " YES "}).status_code == 200
    assert api_client.get(url, {"include_system": "maybe"}).status_code == 400


def test_a_single_valued_parameter_given_twice_is_refused(api_client, app):
    response = api_client.get(f"{API}/apps/{app.pk}/cycles?limit=5&limit=6")
    assert response.status_code == 400
    assert response.json()["fields"] == {"limit": "given more than once"}


def test_number_patterns_read_as_whole_number_does():
    for maximum in (0, 9, 10, 305, MAX_INT32):
        regex = re.compile(f"^{number_pattern(maximum)}$")
        for n in [*range(0, 400), maximum - 1, maximum, maximum + 1, 10 * maximum + 7]:
            for text in (str(n), f"00{n}"):
                assert bool(regex.match(text)) == (whole_number(text, maximum) is not None)
