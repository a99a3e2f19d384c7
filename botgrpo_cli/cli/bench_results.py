"""`botgrpo bench results`: regenerate (or check) the results pages from committed benchmark JSON."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from botgrpo_cli.console import out
from botgrpo_cli.errors import UserError


def register(app: typer.Typer) -> None:
    @app.command("results")
    def bench_results(
        check: Annotated[bool, typer.Option("--check", help="Exit 1 if a page differs from what the JSON gives; write nothing.")] = False,
        repo: Annotated[Path, typer.Option(help="The repository root.")] = Path("."),
        results: Annotated[str, typer.Option(help="The folder of the result sets, relative to the repository root; "
                                                  "the pages are written beside it.")] = "research/results",
    ) -> None:
        """Write research/results.md and research/benchmark-figures.md from the committed records."""
        from botgrpo_cli.bench.results_doc import generate, same_content

        try:
            pages = generate(repo, results)
        except (FileNotFoundError, ValueError) as e:
            raise UserError(f"bench results: {e}") from None
        stale = [path for path, body in pages.items() if not same_content(path, body)]
        if check:
            if stale:
                raise UserError("bench results --check: out of date: " + ", ".join(str(p) for p in stale)
                                + "; run `botgrpo bench results` and commit the result")
            out.print(f"results pages match {results}")
            return
        for path in stale:
            body = pages[path]
            path.write_bytes(body) if isinstance(body, bytes) else path.write_text(body)
        out.print(f"wrote {len(stale)} of {len(pages)} pages from {results}")
