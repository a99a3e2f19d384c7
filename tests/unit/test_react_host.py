"""The react checker's TypeScript host serves only the virtual component files and the type
libraries (rewards/react/host_files.js): hostile completions that name server files get the same
diagnostics whether the file exists or not, and no file content reaches any answer (real Node)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from botgrpo_rewards.protocol import ScoreRequest
from botgrpo_rewards.react.checker import HERE

COMPONENT = "\nexport function A() { return <div />; }\n"
SECRET = "topSecretKey"
# Each hostile use of a path P (no extension; each case adds its own). The component keeps every
# one an attempt, so the type stage runs.
HOSTILE = {
    "typeof import json": "type T = typeof import('{P}.json');\nconst t: T = null as any;\nconst n: number = t;",
    "import default json": "import data from '{P}.json';\nconst n: number = data;",
    "import ts module": "import {{ topSecretValue }} from '{P}.ts';\nconst n: boolean = topSecretValue;",
    "dynamic import": "import('{P}.ts').then((m) => {{ const n: boolean = m.topSecretValue; }});",
    "export star": "export * from '{P}.ts';",
    "import type": "import type {{ TopSecretType }} from '{P}.ts';\nconst n: TopSecretType = 1;",
    "reference path": "/// <reference path=\"{P}.d.ts\" />\nconst n: boolean = topSecretGlobal;",
    "reference types": "/// <reference types=\"{P}\" />\nconst n: boolean = topSecretGlobal;",
    "require": "const x = require('{P}.json');\nconst n: number = x.topSecretKey;",
    "bare import": "import '{P}.json';",
}


@pytest.fixture(scope="module")
def server_files(tmp_path_factory) -> Path:
    """A folder of 'server' files a completion must not see: `exists.*` are there, `absent.*` not
    (same length, so both answers line up position by position)."""
    root = tmp_path_factory.mktemp("server")
    (root / "exists.json").write_text(json.dumps({SECRET: "hunter2"}))
    (root / "exists.ts").write_text("export const topSecretValue = 42;\nexport type TopSecretType = 'hunter2';\n")
    (root / "exists.d.ts").write_text("declare var topSecretGlobal: 'hunter2';\n")
    (root / "exists").mkdir()
    (root / "exists" / "index.d.ts").write_text("declare var topSecretGlobal: 'hunter2';\n")
    return root


def findings(backend, code: str) -> dict:
    """The checker's raw answer (every diagnostic with its message), less the batch id."""
    reply = backend._checker.check(code, True, 50, time.monotonic() + 60)
    return {k: v for k, v in reply.items() if k != "id"}


def _without(reply: dict, path: str) -> str:
    """The reply with the path the completion wrote (and its file name, which messages may quote
    resolved to an absolute path) blanked out."""
    return json.dumps(reply, sort_keys=True).replace(path, "<P>").replace(os.path.basename(path), "<F>")


def assert_no_oracle(backend, template: str, exists: str, absent: str) -> dict:
    """The answers for an existing and a missing path are the same (path text aside) and hold
    nothing of the file."""
    seen = findings(backend, template.replace("{P}", exists) + COMPONENT)
    unseen = findings(backend, template.replace("{P}", absent) + COMPONENT)
    assert _without(seen, exists) == _without(unseen, absent)
    for reply in (seen, unseen):
        text = json.dumps(reply)
        assert "hunter2" not in text and "42" not in text
        assert SECRET not in text or SECRET in template  # a key the completion itself wrote may be echoed
    return seen


@pytest.mark.parametrize("case", list(HOSTILE))
def test_absolute_paths_are_neither_read_nor_probed(react_backend, server_files, case):
    template = HOSTILE[case].format(P="{P}")
    reply = assert_no_oracle(react_backend, template, str(server_files / "exists"), str(server_files / "absent"))
    assert reply["component"] and reply["syntax"] is None
    assert reply["n_type_errors"] >= 1 or case == "export star" or case == "dynamic import"


@pytest.mark.parametrize("case", ["typeof import json", "import ts module", "reference path"])
def test_relative_paths_climbing_out_are_neither_read_nor_probed(react_backend, server_files, case):
    up = os.path.relpath(server_files, HERE)  # ../../.. from the folder of the virtual files
    assert up.startswith("..")
    template = HOSTILE[case].format(P="{P}")
    assert_no_oracle(react_backend, template, f"{up}/exists", f"{up}/absent")


@pytest.mark.parametrize("exists,absent", [
    ("/etc/passwd", "/etc/passwx"),  # a system file
    ("./package.json", "./packagf.json"),  # the service's own files beside the virtual ones
    ("./checker.py", "./checkex.py"),
    ("../react/spec.py", "../react/spex.py"),
])
def test_server_files_beside_and_above_are_invisible(react_backend, exists, absent):
    for template in ("import x from '{P}';\nconst n: number = x;", "type T = typeof import('{P}');\nconst n: T = 1;",
                     "/// <reference path=\"{P}\" />\nconst n: number = 1;"):
        assert_no_oracle(react_backend, template, exists, absent)


def test_the_pinned_type_libraries_still_resolve(react_backend):
    """Control: the allow-list keeps what components need (react, react-dom, lib.dom)."""
    code = ("import { useState } from 'react';\nimport { createRoot } from 'react-dom/client';\n"
            "export function A() {\n  const [n, setN] = useState(0);\n  document.title = String(n);\n"
            "  return <button onClick={() => setN(n + 1)}>{n}</button>;\n}\n"
            "createRoot(document.body).render(<A />);\n")
    assert findings(react_backend, code)["types"] == []
    wrong = findings(react_backend, code.replace("useState(0)", "useState<number>('0')"))
    assert [d["code"] for d in wrong["types"]] == ["TS2345"]  # React's own useState<S> at work


def test_a_scored_request_reveals_nothing_either(react_backend, server_files):
    """The same through the service's answer (score, spans, info)."""
    def answer(path: str) -> str:
        code = HOSTILE["typeof import json"].format(P=path) + COMPONENT
        result = react_backend.score(ScoreRequest(id="x", completion=code), time.monotonic() + 60)
        return json.dumps([result.score, [(s.start, s.end, s.reward, s.label) for s in result.spans],
                           result.metrics, result.info]).replace(path, "<P>")
    seen, unseen = answer(str(server_files / "exists")), answer(str(server_files / "absent"))
    assert seen == unseen and "hunter2" not in seen and SECRET not in seen
