"""The page's views as HTML bodies: the list of memories, one memory, the forget, trust and correct
confirmations, the store's picture. Each takes the service's JSON answers (``service``: ``list``,
``show``, ``stats``; the picture: ``bench.store_report.store_metrics``) and renders them through
``pages.render``, which escapes every value."""

from __future__ import annotations

import hashlib
from typing import Any

from .pages import Safe, badges, hidden, history_table, join, options, render, url

__all__ = ["list_body", "memory_body", "forget_body", "trust_body", "correct_body", "review_body", "picture_body",
           "gone_body", "trusted_by", "fix_digest"]

LIMITS = (20, 50, 100, 200)
VERIFIED = {"": "any", "no": "unverified only", "yes": "verified only"}


def short(text: Any, n: int = 140) -> str:
    text = "" if text is None else str(text)
    return text if len(text) <= n else text[:n - 1] + "…"


def list_body(page: dict, stats: dict, f: dict, banner: str = "") -> Safe:
    """The memories (newest first) under the filters ``f`` (namespace, cause, verified, since, q, limit)."""
    projects = stats.get("by_namespace") or {}
    summary = render('<p class="muted" id="summary">{n} memories in {p} project{s} · store schema {v}</p>',
                     n=stats.get("variants", 0), p=len(projects), s="" if len(projects) == 1 else "s",
                     v=stats.get("schema_version", "?"))
    verified = join(render('<option value="{k}"{sel}>{label}</option>', k=k, label=label,
                           sel=Safe(" selected" if f["verified"] == k else "")) for k, label in VERIFIED.items())
    limits = join(render('<option{sel}>{n}</option>', n=n, sel=Safe(" selected" if f["limit"] == n else ""))
                  for n in LIMITS)
    form = render(
        '<form class="filters" method="get" action="/" id="filters">'
        '<label>project<select name="namespace">{ns}</select></label>'
        '<label>cause<select name="cause">{causes}</select></label>'
        '<label>verified<select name="verified">{verified}</select></label>'
        '<label title="a stream position: a memory\'s page shows where it was first seen">first seen at or after'
        '<input type="number" name="since" min="0" value="{since}" size="8" id="since"></label>'
        '<label>search<input type="search" name="q" value="{q}" placeholder="command, fix, cause..." size="28"></label>'
        '<label>per page<select name="limit">{limits}</select></label>'
        '<button type="submit">Filter</button><a class="muted" href="/">clear</a></form>',
        ns=options(sorted(projects), f["namespace"], any_label="every project"),
        causes=options(sorted(stats.get("by_failure_type") or {}), f["cause"], any_label="every cause"),
        verified=verified, since=f["since"], q=f["q"], limits=limits)
    rows = join(_row(m) for m in page["memories"])
    table = render('<table id="memories"><thead><tr><th class="n">id</th><th>project</th><th>cause</th>'
                   '<th>what failed</th><th>the fix</th><th class="n" title="episodes that taught it">support</th>'
                   '<th class="n" title="times it was shown">shown</th><th class="n">verified</th>'
                   '<th class="n" title="false positives">wrong</th></tr></thead><tbody>{rows}</tbody></table>',
                   rows=rows) if page["memories"] else Safe('<p id="empty">No memory matches these filters.</p>')
    more = Safe("")
    if page.get("next_before"):
        scanned = page.get("scanned")
        note = f" (searched {scanned} memories so far)" if scanned else ""
        more = render('<p><a class="button" id="older" href="{href}">Older memories &rarr;</a> '
                      '<span class="muted">{note}</span></p>',
                      href=url("/", **{**f, "limit": f["limit"] if f["limit"] != 20 else None,
                                       "before": page["next_before"]}), note=note)
    head = render('<div class="box ok" id="banner">{b}</div>', b=banner) if banner else Safe("")
    return render("<h1>Memories</h1>{summary}{head}{form}{table}{more}", summary=summary, head=head, form=form,
                  table=table, more=more)


def _row(m: dict) -> Safe:
    cause_key = f"{m['failure_type']}/{m['root_cause']}" if m.get("root_cause") else m.get("failure_type")
    c = m.get("counters") or {}
    return render('<tr id="memory-{id}"><td class="n"><a href="/memory/{id}">#{id}</a></td>'
                  '<td class="nw"><a href="{ns_href}">{ns}</a></td>'
                  '<td><a href="{cause_href}" title="{ftype}">{cause}</a></td>'
                  '<td><code>{failed}</code></td><td><code>{fix}</code> {badges}</td><td class="n">{support}</td>'
                  '<td class="n">{uses}</td><td class="n">{verified}</td><td class="n">{fp}</td></tr>',
                  id=m["memory_id"], ns=m["namespace"], ns_href=url("/", namespace=m["namespace"]),
                  cause=m.get("cause"), ftype=cause_key, cause_href=url("/", cause=cause_key),
                  failed=short(m.get("failed")), fix=short(m.get("fix")), badges=badges(m), support=m.get("support"),
                  uses=c.get("uses", 0), verified=c.get("verified", 0), fp=c.get("false_positives", 0))


def trusted_by(m: dict) -> dict | None:
    """The ``trust`` row of ``m``'s history still in force (a person vouched for the fix and no
    correction came after it: the store's rule, ``trusted_abroad``), else None."""
    rows = [r for r in m.get("history") or () if r.get("action") in ("trust", "correct")]
    return rows[-1] if rows and rows[-1]["action"] == "trust" else None


def fix_digest(m: dict) -> str:
    """What the trust confirmation vouches for: a short hash of the fix it showed."""
    return hashlib.sha256(str(m.get("fix")).encode()).hexdigest()[:16]


def _boxes(m: dict) -> list[Safe]:
    """A risky command's warning and an unverified memory's note: on its page and its confirmations."""
    boxes = []
    if m.get("warning"):
        boxes.append(render('<div class="box warn" id="warning"><b>Risky command.</b> {w}</div>', w=m["warning"]))
    if m.get("unverified"):
        boxes.append(Safe('<div class="box note" id="unverified"><b>Unverified.</b> No check passed on this fix '
                          "when it was recorded: an agent sees it marked unverified until a verified feedback "
                          "confirms it.</div>"))
    return boxes


def _trust(m: dict) -> Safe:
    by = trusted_by(m)
    if by is None:
        return Safe("no person vouched for it: another project's agent is only asked about it (unless a check "
                    "there verified it)")
    return render("vouched for by <b>{who}</b> at {at}{why}: other projects may be shown it as a verified fix",
                  who=by.get("actor"), at=by.get("at"), why=f" ({by['reason']})" if by.get("reason") else "")


def memory_body(m: dict, banner: str = "", decisions: list[dict] | None = None) -> Safe:
    """One memory whole: the fix, what failed, its variants and support, where it came from, whether a
    person vouched for it, what happened when it was shown (its counters), its history; forget, trust
    (unless it is trusted already) and correct."""
    mid = m["memory_id"]
    boxes = [render('<div class="box ok" id="banner">{b}</div>', b=banner)] if banner else []
    boxes += _boxes(m)
    facts = render('<dl id="facts"><dt>project</dt><dd>{ns}</dd><dt>trust</dt><dd id="trust">{trust}</dd>'
                   '<dt>cause</dt><dd>{cause} <code>{ftype}</code></dd>'
                   '<dt>kind</dt><dd>{kind}, {polarity}</dd><dt>task</dt><dd>{task}</dd>'
                   "<dt>support</dt><dd>{support} episode{s} taught it; first seen at stream position {first}, "
                   "last at {last}</dd></dl>",
                   ns=m["namespace"], cause=m.get("cause"), ftype=f"{m.get('failure_type')}/{m.get('root_cause')}",
                   kind=m.get("kind"), polarity="a fix that worked" if m.get("polarity") == "positive"
                   else "a direction that did not work", task=m.get("task"), support=m.get("support"),
                   s="" if m.get("support") == 1 else "s", first=m.get("first_seen"), last=m.get("last_seen"),
                   trust=_trust(m))
    trust = Safe("") if trusted_by(m) else render(
        '<a class="button" id="trust-it" href="/memory/{id}/trust">Trust it in other projects</a>', id=mid)
    seen = join(render("<li><code>{v}</code></li>", v=v) for v in m.get("seen_in") or ())
    c = m.get("counters") or {}
    counters = join(render('<td class="n">{v}</td>', v=c.get(k, 0))
                    for k in ("uses", "accepted", "verified", "rejected", "false_positives"))
    prov = join(render("<tr><td><code>{ep}</code></td><td><code>{q}</code></td><td class='n'>{pos}</td>"
                       "<td>{ns}</td><td>{method}</td></tr>", ep=p.get("episode_id"), q=p.get("source_query"),
                       pos=p.get("source_pos"), ns=p.get("namespace"), method=p.get("method") or "-")
                for p in m.get("provenance") or ())
    return render(
        '<h1 id="title">Memory #{id} <span class="muted">· {cause}</span> {badges}</h1>{boxes}'
        '<h2>The fix</h2><pre id="fix">{fix}</pre><h2>What failed</h2><pre id="failed">{failed}</pre>'
        '{failure}{facts}<h2>Variants it was seen as</h2><ul id="variants">{seen}</ul>'
        '<h2>Where it came from</h2><table id="provenance"><thead><tr><th>episode</th><th>query</th>'
        '<th class="n">position</th><th>recorded in</th><th>method</th></tr></thead><tbody>{prov}</tbody></table>'
        '<h2>What happened when it was shown</h2><table id="counters"><thead><tr><th class="n">shown</th>'
        '<th class="n">accepted</th><th class="n">verified by a check</th><th class="n">rejected</th>'
        '<th class="n">false positives</th></tr></thead><tbody><tr>{counters}</tr></tbody></table>'
        '<p class="muted">Counts of the feedback agents sent after the recalls that showed it.</p>{decisions}'
        "<h2>History</h2>{history}"
        '<div class="actions"><a class="button" id="correct" href="/memory/{id}/correct">Correct the fix</a>{trust}'
        '<a class="button danger" id="forget" href="/memory/{id}/forget">Forget this memory</a></div>',
        id=mid, cause=m.get("cause"), badges=badges(m), boxes=join(boxes), fix=m.get("fix"), failed=m.get("failed"),
        failure=_failure(m), facts=facts, seen=seen, prov=prov, counters=counters, trust=trust,
        history=history_table(m.get("history") or []), decisions=decisions_table(decisions))


def decisions_table(decisions: list[dict] | None) -> Safe:
    """The gate's decisions that showed the memory, newest first, and what the agent answered."""
    if decisions is None:
        return render('<p class="muted" id="decisions">No audit log beside this store: the decisions that showed '
                      "it are not kept here.</p>")
    if not decisions:
        return render('<p class="muted" id="decisions">No recall has shown it yet.</p>')
    rows = join(render("<tr><td><code>{d}</code></td><td>{ns}</td><td>{act}</td><td>{res}</td><td>{fb}</td>"
                       '<td class="n">{r}</td></tr>', d=d["decision_id"], ns=d["project"] or "-",
                       act=d["action"] + ("" if d["lead"] else " (not the lead)"), res=d["resolution"] or "-",
                       fb=", ".join(d["feedback"]) or "none yet",
                       r="-" if d["reward"] is None else f"{d['reward']:.2f}")
                for d in decisions)
    return render('<h2>Decisions that showed it</h2><table id="decisions"><thead><tr><th>decision '
                  "(<code>repairmem gate explain ID</code>)</th><th>project</th><th>shown as</th><th>ask answered"
                  '</th><th>feedback</th><th class="n">reward</th></tr></thead><tbody>{rows}</tbody></table>',
                  rows=rows)


def _failure(m: dict) -> Safe:
    text = m.get("failure") or m.get("error")
    return render("<h2>The failure it was recorded for</h2><pre id=\"log\">{t}</pre>", t=text) if text else Safe("")


def gone_body(memory_id: int, history: list[dict]) -> Safe:
    return render('<h1>Memory #{id} was forgotten</h1><p>Its text, vectors and counters are gone; the tombstone '
                  "stays in the store's lifecycle log:</p>{h}<p><a href=\"/\">Back to the memories</a></p>",
                  id=memory_id, h=history_table(history))


def _summary(m: dict) -> Safe:
    return render('<table><tbody><tr><th>project</th><td>{ns}</td></tr><tr><th>cause</th><td>{cause}</td></tr>'
                  "<tr><th>what failed</th><td><code>{failed}</code></td></tr>"
                  "<tr><th>the fix</th><td><code>{fix}</code> {badges}</td></tr></tbody></table>",
                  ns=m["namespace"], cause=m.get("cause"), failed=m.get("failed"), fix=m.get("fix"), badges=badges(m))


def _confirm(m: dict, token: str, verb: str, *, title: str, what: Safe, fields: Safe, button: str,
             style: str = "danger") -> Safe:
    """A write's confirmation: the memory (its warning and unverified note kept in view), what ``verb``
    does, and a form that POSTs it with the form token to ``/memory/ID/VERB``; nothing written yet."""
    return render(
        '<h1>{title}</h1>{boxes}{summary}{what}<form method="post" action="/memory/{id}/{verb}" id="{verb}-form">'
        '{hidden}{fields}<div class="actions"><button class="{style}" type="submit" id="confirm-{verb}">{button}'
        '</button><a class="button" href="/memory/{id}">Cancel</a></div></form>',
        title=title, boxes=join(_boxes(m)), summary=_summary(m), what=what, id=m["memory_id"], verb=verb,
        hidden=hidden(token), fields=fields, style=style, button=button)


def forget_body(m: dict, token: str) -> Safe:
    return _confirm(m, token, "forget", title=f"Forget memory #{m['memory_id']}?",
                    what=Safe("<p>Its text, vectors and counters are deleted; a tombstone (who, when, why) stays in "
                              "the store's lifecycle log. No agent is shown it again.</p>"),
                    fields=Safe('<label>why (kept with the tombstone)<br><input name="reason" size="60" id="reason">'
                                "</label>"),
                    button=f"Forget memory #{m['memory_id']}")


def trust_body(m: dict, token: str, person: str) -> Safe:
    """Vouch for the memory as ``person`` (prefilled: the login name, ``memory trust --actor``'s default)."""
    return _confirm(m, token, "trust", title=f"Trust memory #{m['memory_id']} in other projects?",
                    what=Safe("<p>You vouch for this fix as it is shown here: an agent in another project may then be "
                              "shown it as a verified fix (injected), not only asked about it. Your name, the time and "
                              "why stay in its history; a correction of the fix ends it.</p>"),
                    fields=render('<input type="hidden" name="fix_seen" value="{d}"><p><label>who vouches for it<br>'
                                  '<input name="actor" size="30" id="actor" value="{p}" required></label></p><label>'
                                  'why (kept in its history)<br><input name="reason" size="60" id="reason"></label>',
                                  d=fix_digest(m), p=person),
                    button=f"Trust memory #{m['memory_id']}", style="")


def correct_body(m: dict, token: str, *, fix: str | None = None, reason: str = "", error: str = "") -> Safe:
    return render(
        '<h1>Correct memory #{id}</h1>{error}{summary}<form method="post" action="/memory/{id}/correct" '
        'id="correct-form">{hidden}<input type="hidden" name="step" value="review">'
        '<label>the new fix<br><textarea name="fix" rows="4" id="new-fix">{fix}</textarea></label>'
        '<p><label>why (kept in its history)<br><input name="reason" size="60" value="{reason}"></label></p>'
        '<div class="actions"><button type="submit" id="review">Review the correction</button>'
        '<a class="button" href="/memory/{id}">Cancel</a></div></form>',
        id=m["memory_id"], summary=_summary(m), hidden=hidden(token), fix=m.get("fix") if fix is None else fix,
        reason=reason, error=render('<div class="box err" id="error">{e}</div>', e=error) if error else Safe(""))


def review_body(m: dict, token: str, fix: str, reason: str) -> Safe:
    return render(
        '<h1>Correct memory #{id}?</h1><table><tbody><tr><th>now</th><td><pre>{old}</pre></td></tr>'
        '<tr><th>after</th><td><pre id="review-fix">{fix}</pre></td></tr><tr><th>why</th><td>{reason}</td></tr>'
        "</tbody></table><p>The original stays in the memory's history; a person's trust in the old fix does not "
        'carry over to the new one.</p><form method="post" action="/memory/{id}/correct" id="apply-form">{hidden}'
        '<input type="hidden" name="step" value="apply"><input type="hidden" name="fix" value="{fix}">'
        '<input type="hidden" name="reason" value="{reason}"><div class="actions">'
        '<button class="danger" type="submit" id="confirm-correct">Correct memory #{id}</button>'
        '<a class="button" href="/memory/{id}">Cancel</a></div></form>',
        id=m["memory_id"], old=m.get("fix"), fix=fix, reason=reason or "-", hidden=hidden(token))


def picture_body(p: dict) -> Safe:
    """The store report's numbers (``bench.store_report``) as tables and bars."""
    rows = join(render('<tr><td class="nw"><a href="{href}">{ns}</a></td><td class="n">{n}</td><td class="n">{u}</td>'
                       '<td class="n">{neg}</td><td class="n">{uses}</td><td class="n">{fp}</td></tr>',
                       href=url("/", namespace=ns), ns=ns, n=c.get("memories", 0), u=c.get("unverified", 0),
                       neg=c.get("negative", 0), uses=c.get("uses", 0), fp=c.get("false_positives", 0))
                for ns, c in (p.get("projects") or {}).items())
    causes = join(render('<tr><td>{cause}</td><td class="n">{n}</td></tr>', cause=cause, n=n)
                  for cause, n in p.get("causes") or ())
    fps = join(render('<tr><td><a href="/memory/{id}">#{id}</a></td><td>{ns}</td><td><code>{fix}</code></td>'
                      '<td class="n">{fp}</td><td class="n">{uses}</td></tr>', id=r["memory_id"], ns=r["namespace"],
                      fix=short(r["fix"]), fp=r["false_positives"], uses=r["uses"])
               for r in p.get("false_positive_memories") or ())
    return render(
        '<h1>What the store learned</h1><p class="muted">{n} memories in {np} projects.</p><div class="cols"><div>'
        '<h2>Memories per project</h2><table id="projects"><thead><tr><th>project</th><th class="n">memories</th>'
        '<th class="n">unverified</th><th class="n">failed directions</th><th class="n">times shown</th>'
        '<th class="n">false positives</th></tr></thead><tbody>{rows}</tbody></table></div><div>'
        '<h2>Causes</h2><table id="causes"><thead><tr><th>cause</th><th class="n">memories</th></tr></thead>'
        "<tbody>{causes}</tbody></table></div></div>{gate}"
        '<h2>Memories a false positive came back on</h2>{fps}',
        n=p.get("memories", 0), np=len(p.get("projects") or {}), rows=rows, causes=causes, gate=_gate(p),
        fps=render('<table id="false-positives"><thead><tr><th>memory</th><th>project</th><th>fix</th>'
                   '<th class="n">false positives</th><th class="n">times shown</th></tr></thead><tbody>{r}'
                   "</tbody></table>", r=fps) if fps else Safe("<p>None.</p>"))


WORDS = ("inject", "ask", "none")


def _gate(p: dict) -> Safe:
    d = p.get("decisions")
    if not d:
        return Safe("<h2>What the gate told the agents</h2><p id=\"no-audit\">No audit log beside the store "
                    "(<code>--audit PATH</code>): the gate's decisions are not shown.</p>")
    mix = ", ".join(f"{k} {v}" for k, v in sorted(d["mix"].items()))
    feedback = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in sorted(d["feedback"].items())) or "none"
    bars = join(_bar(i, d["window"], w) for i, w in enumerate(d["windows"]))
    legend = join(render('<span class="{w}"></span>{w}', w=w) for w in WORDS)
    reuse = join(render('<tr><td>{a}</td><td>{b}</td><td class="n">{n}</td></tr>', a=r["from"], b=r["in"],
                        n=r["decisions"]) for r in d["reuse"])
    return render(
        '<h2>What the gate told the agents</h2><p id="mix">{total} decisions: {mix}; feedback: {feedback}.</p>'
        '<p class="legend muted">per {window} decisions, oldest first:{legend}</p><table id="action-mix"><tbody>'
        "{bars}</tbody></table><h2>Reused from another project</h2>{reuse}",
        total=d["total"], mix=mix, feedback=feedback, window=d["window"], legend=legend, bars=bars,
        reuse=render('<table id="reuse"><thead><tr><th>memory of</th><th>shown or asked in</th>'
                     '<th class="n">decisions</th></tr></thead><tbody>{r}</tbody></table>', r=reuse) if reuse
        else Safe("<p>No decision showed or asked about another project's memory.</p>"))


def _bar(i: int, window: int, counts: dict) -> Safe:
    total = max(sum(counts.values()), 1)
    spans = join(render('<span class="{w}" style="width:{pct}%" title="{w}: {n}"></span>', w=w,
                        pct=Safe(f"{100 * counts.get(w, 0) / total:.1f}"), n=counts.get(w, 0))
                 for w in WORDS if counts.get(w))
    label = ", ".join(f"{w} {counts[w]}" for w in WORDS if counts.get(w))
    return render('<tr><td class="n muted">{a}–{b}</td><td style="width:70%"><div class="bar">{spans}</div></td>'
                  '<td class="muted">{label}</td></tr>', a=i * window + 1, b=i * window + total, spans=spans,
                  label=label)
