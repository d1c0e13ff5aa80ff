"""The page's HTML: string templates whose every value is escaped unless it is ``Safe`` (HTML this
module built). Whatever comes from the store (commands, logs, fixes, namespaces, reasons, actors) is
untrusted text: it reaches a page only through ``render``, which escapes it (``html.escape``, quotes
too, so a value is safe inside an attribute). No script anywhere: the pages are served with a
Content-Security-Policy that allows none (``app.HEADERS``)."""

from __future__ import annotations

import html
from typing import Any, Iterable
from urllib.parse import urlencode

__all__ = ["Safe", "render", "layout", "error_page", "url"]


class Safe(str):
    """HTML built here from escaped values: ``render`` passes it through as it is."""


def _esc(value: Any) -> str:
    return value if isinstance(value, Safe) else html.escape("" if value is None else str(value), quote=True)


def render(template: str, **values: Any) -> Safe:
    """``template`` (``str.format`` fields) with each value escaped unless it is ``Safe``."""
    return Safe(template.format(**{k: _esc(v) for k, v in values.items()}))


def join(parts: Iterable[str]) -> Safe:
    """Pieces of ``Safe`` HTML side by side (a plain string among them is escaped)."""
    return Safe("".join(_esc(p) for p in parts))


def url(path: str, **query: Any) -> str:
    """``path`` with the query parameters that have a value (None and "" are left out)."""
    kept = {k: v for k, v in query.items() if v not in (None, "")}
    return path + ("?" + urlencode(kept) if kept else "")


CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1f2328;background:#fff;line-height:1.45}
header{background:#24292f;color:#fff;padding:.55em 1.2em;display:flex;gap:1.4em;align-items:baseline}
header a{color:#fff;text-decoration:none}header b{font-size:1.1em}header .store{color:#9da7b3;font-size:.85em;margin-left:auto}
main{max-width:1180px;margin:1em auto;padding:0 1.2em}
table{border-collapse:collapse;width:100%;font-size:.9em;margin:.4em 0 1.2em}
th,td{border-bottom:1px solid #d8dee4;padding:.35em .5em;text-align:left;vertical-align:top}
th{background:#f6f8fa;font-weight:600}td.n,th.n{text-align:right}
code,pre{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.88em}
code{background:#f6f8fa;padding:0 .25em;border-radius:3px;word-break:break-all}
pre{background:#f6f8fa;padding:.6em .8em;border-radius:4px;white-space:pre-wrap;word-break:break-all;max-height:22em;overflow:auto}
.badge{display:inline-block;font-size:.75em;padding:0 .45em;border-radius:9px;margin-right:.3em;white-space:nowrap}
.unverified{background:#fff8c5;color:#7d4e00;border:1px solid #d4a72c}
.risky{background:#ffebe9;color:#a40e26;border:1px solid #ff8182}
.neg{background:#eaeef2;color:#57606a;border:1px solid #afb8c1}
.box{padding:.6em .9em;border-radius:5px;margin:.6em 0}
.box.warn{background:#ffebe9;border:1px solid #ff8182}.box.note{background:#fff8c5;border:1px solid #d4a72c}
.box.ok{background:#dafbe1;border:1px solid #4ac26b}.box.err{background:#ffebe9;border:1px solid #ff8182}
form.filters{display:flex;flex-wrap:wrap;gap:.6em;align-items:end;background:#f6f8fa;padding:.6em;border-radius:5px}
form.filters label{display:flex;flex-direction:column;font-size:.8em;color:#57606a}
form.filters input[type=number]{width:8em}
input,select,textarea,button{font:inherit;font-size:.92em}textarea{width:100%;font-family:ui-monospace,monospace}
button,.button{background:#f6f8fa;border:1px solid #d0d7de;border-radius:5px;padding:.25em .8em;color:#24292f;
text-decoration:none;cursor:pointer;display:inline-block}
button.danger,.button.danger{background:#cf222e;border-color:#a40e26;color:#fff}
.actions{display:flex;gap:.6em;margin:1em 0}.muted{color:#57606a;font-size:.88em}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.25em 1em;margin:.4em 0 1em}dt{color:#57606a}dd{margin:0}
.bar{display:flex;height:1em;border-radius:3px;overflow:hidden;background:#eaeef2;min-width:12em}
.bar span{display:block;height:100%}.inject{background:#2da44e}.ask{background:#d4a72c}.none{background:#8c959f}
.legend span{display:inline-block;width:.8em;height:.8em;margin:0 .3em 0 .8em;vertical-align:middle}
.cols{display:grid;grid-template-columns:1.2fr 1fr;gap:0 2em}.nw{white-space:nowrap}
h1{font-size:1.35em;margin:.6em 0 .3em}h2{font-size:1.1em;margin:1.3em 0 .3em}
"""

LAYOUT = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title} · repairmem</title><style>{css}</style></head><body>
<header><b><a href="/">repairmem</a></b><a href="/" id="nav-memories">Memories</a>
<a href="/picture" id="nav-picture">Picture</a><span class="store">{store}</span></header>
<main>{body}</main></body></html>
"""


def layout(title: str, body: Safe, *, store: str) -> str:
    return render(LAYOUT, title=title, css=Safe(CSS), body=body, store=store)


def error_page(status: int, message: str, *, store: str) -> str:
    titles = {400: "Bad request", 401: "Token needed", 403: "Refused", 404: "Not found", 405: "Method not allowed",
              409: "Nothing changed", 410: "Forgotten", 500: "Store error"}
    title = titles.get(status, "Error")
    body = render('<h1>{status} · {title}</h1><div class="box err" id="error">{message}</div>'
                  '<p><a href="/">Back to the memories</a></p>', status=status, title=title, message=message)
    return layout(title, body, store=store)


def badges(m: dict) -> Safe:
    """The flags a memory carries: unverified, a risky command, a failed direction."""
    out = []
    if m.get("unverified"):
        out.append(Safe('<span class="badge unverified" title="no check passed on it yet">unverified</span>'))
    if m.get("warning"):
        out.append(render('<span class="badge risky" title="{w}">risky command</span>', w=m["warning"]))
    if m.get("polarity") == "negative":
        out.append(Safe('<span class="badge neg" title="a direction that did not work">did not work</span>'))
    return join(out)


def options(values: Iterable[str], chosen: str | None, *, any_label: str) -> Safe:
    """``<option>``s: "any" first, then ``values`` (``chosen`` added when it is not among them)."""
    values = list(values)
    if chosen and chosen not in values:
        values.append(chosen)
    out = [render('<option value=""{sel}>{label}</option>', sel=Safe("" if chosen else " selected"), label=any_label)]
    out += [render('<option value="{v}"{sel}>{v}</option>', v=v, sel=Safe(" selected" if v == chosen else ""))
            for v in values]
    return join(out)


def hidden(token: str) -> Safe:
    return render('<input type="hidden" name="form_token" value="{t}">', t=token)


def history_table(rows: list[dict]) -> Safe:
    if not rows:
        return Safe('<p class="muted" id="history">Nothing happened to it since it was recorded.</p>')
    body = join(render("<tr><td>{at}</td><td>{action}</td><td>{actor}</td><td>{reason}</td><td>{change}</td></tr>",
                       at=r.get("at"), action=r.get("action"), actor=r.get("actor"), reason=r.get("reason") or "",
                       change=_change(r)) for r in rows)
    return render('<table id="history"><thead><tr><th>when</th><th>what</th><th>who</th><th>why</th><th>fix</th>'
                  "</tr></thead><tbody>{body}</tbody></table>", body=body)


def _change(row: dict) -> Safe:
    before, after = row.get("original") or "", row.get("replacement")
    if after:
        return render("<code>{b}</code> &rarr; <code>{a}</code>", b=before, a=after)
    return render("<code>{b}</code>", b=before) if before else Safe("")
