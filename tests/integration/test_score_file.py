"""`botgrpo reward score` as a real process: hostile lines, kill -9 and --resume, unusable outputs, gzip."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BOTGRPO = [sys.executable, "-m", "botgrpo_cli"]
ECHO = f"{sys.executable} {ROOT / 'tests' / 'fixtures' / 'echo_service.py'}"


def _score(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([*BOTGRPO, "reward", "score", *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "COLUMNS": "200"})


def _math_line(i: int) -> str:
    answer = 3 * i + 1
    said = answer if i % 4 else answer + 1  # every fourth answer is wrong
    steps = f"We have $3 \\cdot {i} = {3 * i}$.\n\nThen ${3 * i} + 1 = {answer}$.\n\n"
    return json.dumps({"id": f"q{i}", "prompt": f"Compute 3*{i}+1.", "completion": steps + f"So \\boxed{{{said}}}.",
                       "reference": {"answer": str(answer)}, "options": {"steps": True}})


HOSTILE = [
    '{"id": "surrogate-id-\\ud800", "completion": "x", "reference": {"answer": "1"}}',
    '{"id": "sp", "prompt": "p \\udfff", "completion": "\\ud83d a lone high half", "reference": {"answer": "\\udc00"}}',
    '{"id": "nan", "completion": "\\\\boxed{1}", "reference": {"answer": NaN}}',
    '{"id": "inf", "completion": "\\\\boxed{1}", "reference": {"answer": 1}, "deadline_ms": Infinity}',
    "[" * 5000 + "]" * 5000,
    '{"id": "deep", "completion": "c", "reference": ' + '{"a": ' * 5000 + "1" + "}" * 5000 + "}",
    "\"just a string\"",
    "12",
    "{}",
    '{"id": true, "completion": "x"}',
    '{"id": "no-completion", "reference": {"answer": "1"}}',
    '{"id": "bad-ref", "completion": "x", "reference": "not an object"}',
    '{"id": "url", "completion": "x", "reference": {"answer": "1"}, "options": {"vlm_base_url": "http://127.0.0.1:9"}}',
    '{"id": "u2028", "completion": "a\u2028b \\\\boxed{2}", "reference": {"answer": "2"}}',
    '{"id": "crlf", "completion": "\\\\boxed{3}", "reference": {"answer": "3"}}\r',
    '{"id": "broken", "completion": ',
]


def test_a_hostile_rollout_file_gets_one_answer_line_each(tmp_path):
    path = tmp_path / "hostile.jsonl"
    with path.open("wb") as f:
        for line in HOSTILE:
            f.write(line.encode("utf-8", "surrogatepass") + b"\n")
        f.write(b'{"id": "bytes", "completion": "\xff\xfe not utf-8 \\\\boxed{4}", "reference": {"answer": "4"}}\n')
        f.write(b"\n   \n")  # blank lines are not rollouts
        f.write((_math_line(7) + "\n").encode())
    proc = _score(str(path), "--service", "math")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    text = (tmp_path / "hostile.scored.jsonl").read_text(encoding="utf-8")
    rows = [json.loads(line) for line in text.split("\n")[:-1]]  # not splitlines(): U+2028 is data
    assert len(rows) == len(HOSTILE) + 2
    by_id = {r.get("id"): r for r in rows if isinstance(r.get("id"), str)}
    assert by_id["surrogate-id-\ud800"]["status"] == "ok"  # a lone surrogate is data, echoed back as written
    assert by_id["sp"]["status"] == "ok" and by_id["u2028"]["score"] == 1.0 and by_id["crlf"]["score"] == 1.0
    assert by_id["bytes"]["status"] == "ok" and by_id["bytes"]["score"] == 1.0
    assert by_id["url"]["error"]["type"] == "bad_request" and by_id["no-completion"]["status"] == "error"
    assert rows[-1]["id"] == "q7" and rows[-1]["score"] == 1.0
    problems = {r["line"]: r["error"]["message"] for r in rows if "line" in r and r["status"] == "error"}
    assert "NaN or Infinity" in problems[3] and "NaN or Infinity" in problems[4]
    assert "nested too deep" in problems[5] and "nested too deep" in problems[6]
    assert all(r["status"] in ("ok", "error") and ("score" in r) for r in rows)


def test_kill_9_then_resume_equals_an_uninterrupted_run(tmp_path):
    source = tmp_path / "math.jsonl"
    source.write_text("".join(_math_line(i) + "\n" for i in range(2500)))
    full = _score(str(source), "--service", "math", "--workers", "2", "-o", str(tmp_path / "full.jsonl"))
    assert full.returncode == 0, full.stderr
    out = tmp_path / "cut.jsonl"
    partial = tmp_path / "cut.jsonl.partial"
    proc = subprocess.Popen([*BOTGRPO, "reward", "score", str(source), "--service", "math", "--workers", "2",
                             "-o", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and (not partial.exists() or partial.stat().st_size < 200_000):
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)  # the CLI and its service processes, mid-run
    proc.wait(30)
    assert partial.exists() and not out.exists()
    kept = partial.read_bytes().count(b"\n")
    assert 0 < kept < 2500
    resumed = _score(str(source), "--service", "math", "--workers", "2", "-o", str(out), "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert f"({kept} kept from the earlier run)" in " ".join(resumed.stdout.split())
    assert out.read_bytes() == (tmp_path / "full.jsonl").read_bytes() and not partial.exists()


@pytest.mark.parametrize("target, words", [
    ("SAME", "is the input file"),
    ("missing/out.jsonl", "does not exist"),
    ("DIR", "is a folder"),
    ("/dev/full", "not a regular file"),
])
def test_unusable_outputs_are_refused_before_scoring(tmp_path, target, words):
    source = tmp_path / "in.jsonl"
    source.write_text(_math_line(1) + "\n")
    before = source.read_bytes()
    (tmp_path / "DIR").mkdir()
    out = {"SAME": str(source), "DIR": str(tmp_path / "DIR")}.get(target, target)
    out = out if out.startswith("/") else str(tmp_path / out)
    started = time.monotonic()
    proc = _score(str(source), "--service", "math", "-o", out)
    assert proc.returncode == 1 and words in proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr and len((proc.stdout + proc.stderr).strip().splitlines()) == 1
    assert source.read_bytes() == before
    assert time.monotonic() - started < 60  # no service was started


def test_gzip_input_scores_like_plain(tmp_path):
    lines = "".join(_math_line(i) + "\n" for i in range(20))
    (tmp_path / "a.jsonl").write_text(lines)
    with gzip.open(tmp_path / "b.jsonl.gz", "wt") as f:
        f.write(lines)
    for name in ("a.jsonl", "b.jsonl.gz"):
        proc = _score(str(tmp_path / name), "--service", "echo", "--command", ECHO)
        assert proc.returncode == 0, proc.stderr
    def rows(name: str) -> list[dict]:  # info holds the echo process's pid
        return [{k: v for k, v in json.loads(x).items() if k != "info"} for x in (tmp_path / name).read_text().splitlines()]
    assert rows("a.scored.jsonl") == rows("b.scored.jsonl") and len(rows("a.scored.jsonl")) == 20


def test_resume_without_a_partial_output_says_so(tmp_path):
    (tmp_path / "in.jsonl").write_text(_math_line(1) + "\n")
    proc = _score(str(tmp_path / "in.jsonl"), "--service", "math", "--resume")
    said = proc.stdout + proc.stderr
    assert proc.returncode == 1 and "there is no" in said and "in.scored.jsonl.partial" in said


@pytest.mark.slow
def test_memory_stays_bounded_on_100k_lines(tmp_path):
    source = tmp_path / "big.jsonl"
    with source.open("w") as f:
        for i in range(100_000):
            f.write(json.dumps({"id": f"r{i}", "prompt": "p" * 50, "completion": "c" * 80, "reference": {}}) + "\n")
    probe = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:], capture_output=True); "
             "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    proc = subprocess.run([sys.executable, "-c", probe, *BOTGRPO, "reward", "score", str(source), "--service", "echo",
                           "--command", ECHO], capture_output=True, text=True, timeout=600)
    code, max_rss_kb = proc.stdout.split()
    assert code == "0"
    assert int(max_rss_kb) < 200 * 1024, f"peak RSS {int(max_rss_kb) / 1024:.0f} MB"
    assert (tmp_path / "big.scored.jsonl").read_bytes().count(b"\n") == 100_000


def _one_line_error(proc: subprocess.CompletedProcess) -> str:
    said = (proc.stdout + proc.stderr).strip().splitlines()
    assert proc.returncode == 1 and "Traceback" not in proc.stdout + proc.stderr
    assert len([x for x in said if x.startswith("error:")]) == 1, said
    return " ".join(" ".join(said).split())


def _echo_rows(path: Path) -> list[dict]:  # info holds the echo process's pid
    return [{k: v for k, v in json.loads(x).items() if k != "info"} for x in path.read_text().splitlines()]


@pytest.mark.parametrize("target", [".", "/", ""])
def test_a_folder_as_output_is_one_line(tmp_path, target):
    (tmp_path / "in.jsonl").write_text(_math_line(1) + "\n")
    said = _one_line_error(_score(str(tmp_path / "in.jsonl"), "--service", "math", "-o", target))
    assert "is a folder" in said and len(said.splitlines()) == 1


def test_a_corrupt_gzip_and_a_nan_weight_are_one_line(tmp_path):
    corrupt = tmp_path / "bad.jsonl.gz"
    corrupt.write_bytes(b"\x1f\x8b" + b"not deflate at all" * 50)
    assert "corrupt gzip data" in _one_line_error(_score(str(corrupt), "--service", "math"))
    (tmp_path / "in.jsonl").write_text(_math_line(1) + "\n")
    for weight in ("nan", "inf", "x"):
        said = _one_line_error(_score(str(tmp_path / "in.jsonl"), "-s", "math", "-s", f"react={weight}"))
        assert "finite number" in said


def test_a_truncated_gzip_scores_every_readable_line_then_says_so(tmp_path):
    import zlib

    lines = "".join(_math_line(i) + "\n" for i in range(400))
    data = gzip.compress(lines.encode())
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(data[: len(data) // 2])
    readable = zlib.decompressobj(wbits=31).decompress(data[: len(data) // 2]).count(b"\n")
    assert 0 < readable < 400
    said = _one_line_error(_score(str(cut), "--service", "echo", "--command", ECHO))
    assert f"after line {readable}" in said and "truncated" in said and "--resume" in said
    partial = tmp_path / "cut.scored.jsonl.partial"
    assert len(_echo_rows(partial)) == readable and all(r["status"] == "ok" for r in _echo_rows(partial))
    cut.write_bytes(data)  # the whole file restored: --resume finishes it
    proc = _score(str(cut), "--service", "echo", "--command", ECHO, "--resume")
    assert proc.returncode == 0, proc.stderr
    (tmp_path / "plain.jsonl").write_text(lines)
    assert _score(str(tmp_path / "plain.jsonl"), "--service", "echo", "--command", ECHO).returncode == 0
    assert _echo_rows(tmp_path / "cut.scored.jsonl") == _echo_rows(tmp_path / "plain.scored.jsonl")
    assert not partial.exists() and not (tmp_path / "cut.scored.jsonl.partial.json").exists()


def test_resume_refuses_another_input_or_another_service(tmp_path):
    lines = [_math_line(i) + "\n" for i in range(30)]
    data = gzip.compress("".join(lines).encode())
    source = tmp_path / "in.jsonl.gz"
    source.write_bytes(data[: len(data) * 2 // 3])  # a partial output to continue: scoring stops at the cut
    _one_line_error(_score(str(source), "--service", "math"))
    partial = tmp_path / "in.scored.jsonl.partial"
    before = partial.read_bytes()
    assert before.count(b"\n") > 2
    said = _one_line_error(_score(str(source), "--service", "react", "--resume"))
    assert "other settings" in said and "math" in said and "react" in said
    said = _one_line_error(_score(str(source), "--service", "math", "--deadline-ms", "5000", "--resume"))
    assert "deadline_ms" in said
    with gzip.open(source, "wt") as f:  # lines prepended: every kept line now sits against another input line
        f.write(_math_line(99) + "\n" + "".join(lines))
    said = _one_line_error(_score(str(source), "--service", "math", "--resume"))
    assert "line 1 of" in said and "not made from" in said
    (tmp_path / "in.scored.jsonl.partial.json").unlink()  # no record of what it was made from: not continued
    said = _one_line_error(_score(str(source), "--service", "math", "--resume"))
    assert "missing or unreadable" in said
    assert partial.read_bytes() == before  # a refused resume leaves the partial as it was


def _limit_file_size(limit: int):
    def apply() -> None:
        import resource

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


def test_a_full_disk_reports_exactly_the_lines_saved_and_resume_finishes(tmp_path):
    lines = "".join(_math_line(i) + "\n" for i in range(600))
    source = tmp_path / "in.jsonl"
    source.write_text(lines)
    proc = subprocess.run([*BOTGRPO, "reward", "score", str(source), "--service", "echo", "--command", ECHO],
                          capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "200"},
                          preexec_fn=_limit_file_size(60_000))
    said = _one_line_error(proc)
    partial = tmp_path / "in.scored.jsonl.partial"
    on_disk = partial.read_bytes()
    saved = on_disk.count(b"\n")
    assert on_disk.endswith(b"\n") and 0 < saved < 600
    assert f"{saved} lines are saved there" in said
    assert _score(str(source), "--service", "echo", "--command", ECHO, "--resume").returncode == 0
    (tmp_path / "again.jsonl").write_text(lines)
    assert _score(str(tmp_path / "again.jsonl"), "--service", "echo", "--command", ECHO).returncode == 0
    assert _echo_rows(tmp_path / "in.scored.jsonl") == _echo_rows(tmp_path / "again.scored.jsonl")
