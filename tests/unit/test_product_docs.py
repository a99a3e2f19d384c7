"""The product's pages (README.md, docs/, the protocol and the services' READMEs) are a guide, not a lab notebook: no issue numbers, no rounds of
work, no commit ids, dates or load figures. Measurements with their provenance live under research/."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = {
    "an issue number": re.compile(r"\bissues? #?\d+|\(#\d+\)|\bthe #\d+\b", re.I),
    "a round of work": re.compile(r"\bwaves?\b", re.I),
    "a commit id": re.compile(r"(?<![\w#/.-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}(?![\w-])"),
    "a date": re.compile(r"\b20\d\d-\d\d-\d\d\b|\b\d{1,2} (?:January|February|March|April|May|June|July|August|"
                         r"September|October|November|December) 20\d\d\b"),
    "a load figure": re.compile(r"\bload(?: average)?s? (?:of |about |~)?\d", re.I),
}


def notebook_lines(text: str) -> list[str]:
    """'line N: what (the match)' for every line that reads like a lab notebook."""
    return [f"line {n}: {what} ({m.group(0)!r})" for n, line in enumerate(text.splitlines(), 1)
            for what, pattern in NOTEBOOK.items() for m in pattern.finditer(line)]


def test_product_pages_carry_no_notebook():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "rewards/PROTOCOL.md",
             *sorted((ROOT / "rewards").glob("*/README.md"))]
    found = {str(p.relative_to(ROOT)): bad for p in pages if (bad := notebook_lines(p.read_text(encoding="utf-8")))}
    assert found == {}


def test_the_check_sees_each_kind():
    text = ("# Title (issue 29)\nwhat changed in this wave\nat 1a1ee37 on 2026-12-02, load 11-26\n"
            "[anchor](#2-advantage-estimators), a 1e-4 eps, `deadbeef` is hex but no digit\n")
    kinds = [line.split(": ", 1)[1].split(" (")[0] for line in notebook_lines(text)]
    assert kinds == ["an issue number", "a round of work", "a commit id", "a date", "a load figure"]


def test_the_readme_is_a_short_guide_that_starts_with_the_two_commands():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    first_block = text.split("```bash\n", 1)[1].split("```", 1)[0].splitlines()
    assert [line.split("#")[0].strip() for line in first_block] == ["make demo", "make test"]
    assert "|---|" not in text.split("## Results", 1)[1].split("\n## ", 1)[0]  # results: a link, no verdict table
