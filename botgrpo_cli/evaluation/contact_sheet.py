"""An HTML contact sheet of rendered components: one card per completion, for people to look at."""

from __future__ import annotations

import html


def contact_sheet(rows: list[dict], title: str) -> str:
    """index.html: a grid of cards (id, prompt excerpt, screenshot, rendered, score, first error).
    Everything from the rollout file is escaped: it is model output, shown, never run."""
    cards = []
    for r in rows:
        img = f'<img src="png/{html.escape(r["png"])}" loading="lazy">' if r["png"] else '<div class="none">no screenshot</div>'
        score = "&ndash;" if r["score"] is None else f'{r["score"]:.3f}'
        status = "yes" if r["rendered"] else "no"
        err = f'<pre class="err">{html.escape(r["error"])}</pre>' if r["error"] else ""
        cards.append(
            f'<div class="card {status}"><div class="head"><b>{html.escape(r["id"]) or "line " + str(r["line"])}</b>'
            f' rendered: {status} &middot; score: {score}</div><p>{html.escape(r["prompt"])}</p>{img}{err}</div>'
        )
    style = (
        "body{font-family:sans-serif;margin:16px;background:#f4f4f4}.grid{display:grid;"
        "grid-template-columns:repeat(auto-fill,minmax(340px,1fr));gap:12px}.card{background:#fff;padding:8px;"
        "border-left:6px solid #3a3}.card.no{border-left-color:#c33}.card img{width:100%;border:1px solid #ccc}"
        ".card p{font-size:12px;color:#444;max-height:4.5em;overflow:hidden}.err{font-size:11px;color:#a00;"
        "white-space:pre-wrap;max-height:6em;overflow:auto}.none{height:120px;background:#eee;display:flex;"
        "align-items:center;justify-content:center;color:#888}"
    )
    n_ok = sum(r["rendered"] for r in rows)
    return (
        f'<!doctype html><html><head><meta charset="utf-8"><title>{html.escape(title)}</title><style>{style}</style>'
        f'</head><body><h1>{html.escape(title)}</h1><p>{n_ok} of {len(rows)} rendered</p>'
        f'<div class="grid">{"".join(cards)}</div></body></html>'
    )
