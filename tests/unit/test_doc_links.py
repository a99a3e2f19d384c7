"""Every reference to a document resolves: the relative links of every Markdown file in the repository,
and every `*.md` path a docstring or comment names. A moved or renamed page fails here, not in a reader's
browser."""

from __future__ import annotations

import io
import re
import subprocess
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")  # [text](target "title")
# a path with a folder (docs/x.md), or a document's capitalised name (ALGORITHMS.md, README.md); a bare
# lower-case name is a file the code writes (eval.md), not a reference
NAMED_DOC = re.compile(r"(?<![\w./-])((?:[\w.-]+/)+[\w.-]+\.md|[A-Z][A-Z_]*\.md)\b")
CODE_SUFFIXES = (".py", ".sh", ".yaml", ".yml")  # not pyproject: its package data is relative to each package
PAGE_FOLDERS = ("docs", "research")  # where generated pages live, so their links are relative to these


def _tracked(*suffixes: str) -> list[Path]:
    """Files git knows (committed or added, not ignored) ending in one of `suffixes`."""
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout.split("\n")
    return [ROOT / p for p in out if p.endswith(suffixes) and (ROOT / p).is_file() and "node_modules/" not in p]


def _outside_code_blocks(text: str) -> str:
    """Markdown text with fenced code blocks and inline code blanked out (links there are examples)."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)


def dangling_links(path: Path, root: Path = ROOT) -> list[str]:
    """The relative link targets of a Markdown file that name no file or folder (anchors ignored), and
    the documents its text names (`docs/x.md`, `ALGORITHMS.md`) that resolve nowhere (see _resolves)."""
    text = path.read_text(encoding="utf-8")
    bad = []
    for target in LINK.findall(_outside_code_blocks(text)):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue  # http:, mailto:, an anchor on the same page
        file = target.split("#", 1)[0]
        if not (path.parent / file).exists():
            bad.append(f"{path.relative_to(root)}: ({target})")
    prose = LINK.sub("", re.sub(r"^```.*?^```", "", text, flags=re.S | re.M))  # inline code counts: `docs/x.md`
    bad += [f"{path.relative_to(root)}: {name}" for name in NAMED_DOC.findall(prose) if not _resolves(name, path, root)]
    return bad


def _resolves(name: str, path: Path, root: Path) -> bool:
    """A named document exists beside `path`, in a folder above it, or in a folder of pages."""
    here = path.parent.relative_to(root)
    return any((root / base / name).exists() for base in (here, *here.parents, *PAGE_FOLDERS))


def _comments_and_strings(path: Path) -> str:
    """The comments and string literals of a Python file (where docstrings name documents)."""
    text = path.read_text(encoding="utf-8")
    if path.suffix != ".py":
        return text
    kinds = (tokenize.COMMENT, tokenize.STRING)
    return "\n".join(tok.string for tok in tokenize.generate_tokens(io.StringIO(text).readline)
                     if tok.type in kinds)


def dangling_names(path: Path, root: Path = ROOT) -> list[str]:
    """`dir/name.md` paths and NAME.md documents named in a code file that resolve neither from the repository root, nor from
    the file's own folder or one above it, nor from a folder of pages (a generator's relative links)."""
    return [f"{path.relative_to(root)}: {name}" for name in NAMED_DOC.findall(_comments_and_strings(path))
            if not _resolves(name, path, root)]


def test_every_relative_link_in_every_markdown_file_resolves():
    pages = _tracked(".md")
    assert any(p.name == "algorithms.md" for p in pages)  # the scan sees the docs
    assert [bad for p in pages for bad in dangling_links(p)] == []


def test_every_document_a_comment_or_docstring_names_exists():
    files = [p for p in _tracked(*CODE_SUFFIXES) if p != Path(__file__).resolve()]  # not this file's examples
    assert any(p.name == "advantages.py" for p in files)
    assert [bad for p in files for bad in dangling_names(p)] == []


def test_the_docs_index_lists_every_page():
    index = ROOT / "docs" / "README.md"
    linked = {(index.parent / t.split("#", 1)[0]).resolve() for t in LINK.findall(index.read_text(encoding="utf-8"))}
    pages = {p.resolve() for p in (ROOT / "docs").glob("*.md") if p != index}
    assert sorted(p.name for p in pages - linked) == []


def test_the_checks_see_a_broken_link_and_a_broken_name(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "algorithms.md").write_text("# A\n")
    (tmp_path / "rewards").mkdir()
    (tmp_path / "rewards" / "PROTOCOL.md").write_text("# P\n")
    page = tmp_path / "docs" / "index.md"
    page.write_text("[ok](algorithms.md#2) [gone](nowhere.md) `[code](x.md)` [web](https://x.org/y.md)\n"
                    "as ALGORITHMS.md says; see `rewards/PROTOCOL.md` and docs/algorithms.md\n")
    code = tmp_path / "rewards" / "mod.py"
    code.write_text('"""See docs/algorithms.md, ALGORITHMS.md and docs/ALGORITHMS.md; writes eval.md."""\n'
                    'x = "a/b.md"  # ../rewards/PROTOCOL.md and PROTOCOL.md beside it\n')
    assert dangling_links(page, tmp_path) == ["docs/index.md: (nowhere.md)", "docs/index.md: ALGORITHMS.md"]
    assert dangling_names(code, tmp_path) == ["rewards/mod.py: ALGORITHMS.md", "rewards/mod.py: docs/ALGORITHMS.md",
                                              "rewards/mod.py: a/b.md"]
