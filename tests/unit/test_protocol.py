"""Protocol v1 wire structs: round trips and every validation error a line can earn."""

import json

import pytest

from botgrpo_rewards import protocol as P
from botgrpo_rewards.protocol import codec  # where the size caps are read (patched below)


def test_score_request_round_trip_keeps_every_field():
    req = P.ScoreRequest(id="r1", completion="x = 1\n", prompt="p", reference={"answer": "1"}, options={"k": 2}, deadline_ms=250)
    back = P.decode_request(P.encode(req))
    assert back == req


def test_response_round_trip_with_spans_metrics_and_non_ascii():
    text = "é😀ab"  # offsets are code points: the emoji is one character
    resp = P.ScoreResponse(id=7, status="ok", score=-0.5, spans=[P.Span(1, 2, -1.0, "emoji")], metrics={"m": 1.0}, info={"why": "é"})
    line = P.encode(resp)
    assert line.isascii()  # ASCII-escaped on the wire
    back = P.decode_message(line, n_chars=len(text))
    assert back == resp


def test_error_response_carries_no_score_and_round_trips():
    resp = P.error_response("a", "backend", "it broke")
    obj = json.loads(P.encode(resp))
    assert obj["status"] == "error" and "score" not in obj and obj["error"] == {"type": "backend", "message": "it broke"}
    assert P.decode_message(P.encode(resp)) == resp


def test_hello_ping_pong_shutdown():
    hello = P.Hello("math", "0.1.0", ["spans", "steps"], 32)
    assert P.decode_message(P.encode(hello)) == hello
    assert P.decode_request('{"v":1,"op":"ping","id":"p1"}') == P.Ping("p1")
    assert P.decode_message(P.encode(P.Pong("p1"))) == P.Pong("p1")
    assert isinstance(P.decode_request(P.encode(P.Shutdown())), P.Shutdown)


@pytest.mark.parametrize(
    "line, rid, type_, words",
    [
        ("{not json", None, "bad_request", "invalid JSON"),
        ("[1, 2]", None, "bad_request", "JSON object"),
        ('{"op":"score","completion":"x"}', None, "bad_request", "'id'"),
        ('{"id":["a"],"completion":"x"}', None, "bad_request", "'id'"),
        ('{"id":"a"}', "a", "bad_request", "missing field 'completion'"),
        ('{"id":"a","completion":3}', "a", "bad_request", "'completion' must be a string"),
        ('{"id":"a","completion":"x","reference":"204"}', "a", "bad_request", "'reference' must be an object"),
        ('{"id":"a","completion":"x","deadline_ms":true}', "a", "bad_request", "boolean"),
        ('{"id":"a","completion":"x","deadline_ms":-5}', "a", "bad_request", "positive"),
        ('{"v":2,"id":"a","completion":"x"}', "a", "version", "version 2"),
        ('{"id":"a","op":"dance"}', "a", "bad_request", "unknown op"),
    ],
)
def test_bad_requests_name_the_problem_and_keep_a_readable_id(line, rid, type_, words):
    with pytest.raises(P.ProtocolError) as err:
        P.decode_request(line)
    assert err.value.id == rid
    assert err.value.type == type_
    assert words in str(err.value)


def test_text_too_large_is_a_too_large_error(monkeypatch):
    monkeypatch.setattr(codec, "MAX_COMPLETION_CHARS", 10)
    with pytest.raises(P.ProtocolError) as err:
        P.decode_request(json.dumps({"id": "big", "completion": "x" * 11}))
    assert (err.value.id, err.value.type) == ("big", "too_large")


def test_line_too_large_is_rejected_before_parsing(monkeypatch):
    monkeypatch.setattr(codec, "MAX_LINE_BYTES", 20)
    with pytest.raises(P.ProtocolError) as err:
        P.decode_request(b'{"id":"a","completion":"' + b"x" * 30 + b'"}')
    assert err.value.type == "too_large" and err.value.id is None


def test_deadline_is_capped():
    req = P.decode_request(json.dumps({"id": 1, "completion": "", "deadline_ms": 10**9}))
    assert req.deadline_ms == P.MAX_DEADLINE_MS


@pytest.mark.parametrize(
    "spans, words",
    [
        ([P.Span(0, 5, 0.1)], "outside"),  # past the end of a 4-char text
        ([P.Span(2, 2, 0.1)], "empty"),
        ([P.Span(0, 3, 0.1), P.Span(2, 4, 0.1)], "overlaps"),
        ([P.Span(0, 1, 1.5)], "outside [-1.0, 1.0]"),
        ([P.Span(0, 1, float("nan"))], "finite"),
        ([P.Span(0.5, 1, 0.0)], "integers"),
        ([(0, 1, 0.0)], "Span"),
    ],
)
def test_invalid_spans_are_rejected(spans, words):
    with pytest.raises(P.ProtocolError) as err:
        P.validate_spans(spans, 4, "r")
    assert words in str(err.value) and err.value.type == "bad_response"


def test_spans_come_back_sorted():
    out = P.validate_spans([P.Span(2, 4, 0.5), P.Span(0, 1, -1.0)], 4)
    assert [(s.start, s.end) for s in out] == [(0, 1), (2, 4)]


@pytest.mark.parametrize(
    "obj, words",
    [
        ({"id": "a", "status": "ok", "score": 2}, "score"),
        ({"id": "a", "status": "ok", "score": True}, "score"),
        ({"id": "a", "status": "ok", "score": 0, "metrics": {"m": "high"}}, "metric m"),
        ({"id": "a", "status": "ok", "score": 0, "spans": [{"start": 0, "end": 9, "reward": 0}]}, "outside"),
        ({"id": "a", "status": "maybe"}, "status"),
    ],
)
def test_invalid_responses_are_rejected(obj, words):
    with pytest.raises(P.ProtocolError) as err:
        P.response_from_json(obj, n_chars=3)
    assert words in str(err.value)


def test_clean_info_keeps_strings_and_finite_numbers_only():
    info = P.clean_info({"s": "x", "n": 2, "f": 0.5, "nan": float("nan"), "obj": {"a": 1}, "flag": True})
    assert info == {"s": "x", "n": 2, "f": 0.5, "nan": "nan", "obj": "{'a': 1}", "flag": "True"}
    json.dumps(info, allow_nan=False)  # always encodable


@pytest.mark.parametrize("options, name", [
    ({"vlm_base_url": "http://127.0.0.1:9/v1"}, "vlm_base_url"),
    ({"vlm_api_key": "sk-1"}, "vlm_api_key"),
    ({"save_dir": "/etc"}, "save_dir"),
    ({"judge": "vlm", "extra": {"auth-token": "x"}}, "extra.auth-token"),
    ({"OutputPath": "x"}, "OutputPath"),
    ({"server": "https://attacker.example"}, "server"),  # a URL under an innocent name
])
def test_options_may_not_name_a_url_secret_or_path(options, name):
    line = json.dumps({"op": "score", "id": "r", "completion": "c", "options": options})
    with pytest.raises(P.ProtocolError) as err:
        P.decode_request(line)
    assert err.value.type == "bad_request" and err.value.id == "r" and repr(name) in str(err.value)
    assert "service's own settings" in str(err.value)


def test_ordinary_options_pass_the_server_setting_guard():
    for options in ({"steps": True}, {"judge": "vlm", "mode": "pairwise", "vlm_model": "m", "save_group": "a/png"},
                    {"max_type_errors": 5, "syntax_weight": 0.5}):
        assert P.decode_request(json.dumps({"id": 1, "completion": "c", "options": options})).options == options


def test_code_outside_the_protocol_package_imports_only_its_surface():
    """One protocol module: clients and services import `botgrpo_rewards.protocol`, never the files
    behind it (wire, checks, codec), so those can be reorganised without touching a caller."""
    import ast
    from pathlib import Path

    root = Path(P.__file__).resolve().parents[2]
    inside = Path(P.__file__).resolve().parent
    files = [["botgrpo_rewards", "protocol", p.stem] for p in inside.glob("*.py") if p.stem != "__init__"]
    leaks = []
    for top in ("botgrpo_cli", "rewards", "tasks"):
        for path in sorted((root / top).rglob("*.py")):
            if inside in path.parents or "node_modules" in path.parts:
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                    [f"{node.module}.{a.name}" for a in node.names] if isinstance(node, ast.ImportFrom) else [])
                leaks += [f"{path.relative_to(root)}: {n}" for n in names if n.split(".")[:3] in files]
    assert leaks == []
