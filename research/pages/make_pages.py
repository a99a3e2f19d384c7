"""Regenerate (or check) the research pages from the committed records, from the repository root:

    python research/pages/make_pages.py            # rewrite research/results.md and research/benchmark-figures.md
    python research/pages/make_pages.py --check    # exit 1 when a page differs from what the records give

The generator is research, not product: it knows our result sets and plans (results_doc.py) and
imports botgrpo only for its statistics helpers.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from results_doc import generate, same_content


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a page differs; write nothing")
    parser.add_argument("--repo", type=Path, default=Path("."), help="the repository root")
    parser.add_argument("--results", default="research/results",
                        help="the result sets' folder, relative to the root; the pages are written beside it")
    args = parser.parse_args(argv)
    try:
        pages = generate(args.repo, args.results)
    except (FileNotFoundError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    stale = [path for path, body in pages.items() if not same_content(path, body)]
    if args.check:
        if stale:
            print("out of date: " + ", ".join(str(p) for p in stale) + "; run `python research/pages/make_pages.py` "
                  "and commit the result", file=sys.stderr)
            return 1
        print(f"results pages match {args.results}")
        return 0
    for path in stale:
        body = pages[path]  # text pages, and the curves as PNG bytes
        path.write_bytes(body) if isinstance(body, bytes) else path.write_text(body)
    print(f"wrote {len(stale)} of {len(pages)} pages from {args.results}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
