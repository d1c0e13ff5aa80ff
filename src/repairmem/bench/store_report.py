"""A picture of what a store learned: ``repairmem memory report --store DB [--audit PATH] [--out DIR]``.

From the store and its gate's audit log alone (read-only, no encoder loaded): the memories per
project and cause, verified or not, with their counters; the gate's decisions — the mix of what the
agent was told (inject, ask, none: ``vocabulary.agent_action``) over the stream, in windows of
decisions (``action_mix.png``); the feedback that followed (verified, false positive, rejected, a
correct abstention); the memories a false positive came back on; and what each project reused from
another (a decision in one namespace that showed or asked about another's memory). Written as
``report.md``, ``report.html`` (one self-contained page, the plot embedded) and ``report.json``.
"""

from __future__ import annotations

import io
import json
from collections import Counter
from pathlib import Path
from typing import Any

from ..addresses import redact
from ..check import check_int
from ..files import output_dir, write_atomic
from ..gate.audit import AuditLog
from ..store import open_store
from ..vocabulary import agent_action
from .report import blocks_html, blocks_markdown

__all__ = ["store_metrics", "write_store_report"]

FEEDBACK = ("verified", "accepted", "false_positive", "rejected", "correct_abstain", "confirmed")
TOP = 15        # causes and false-positive memories listed


def store_metrics(store_path: str, audit_path: str | None = None, *, window: int = 20) -> dict[str, Any]:
    """The report's numbers (module doc); ``audit_path`` None: the store's own (``STORE.audit.db``) when it exists."""
    check_int(window, "window", low=1, where="memory report")
    with open_store(store_path, read_only=True) as store:
        memories = store.all_variants()
    by_id = {m.id: m for m in memories}
    projects: dict[str, Counter] = {}
    for m in memories:
        row = projects.setdefault(m.namespace, Counter())
        row.update(memories=1, unverified=int(m.unverified), negative=int(m.polarity.value == "-"),
                   uses=m.counters.uses, false_positives=m.counters.false_positives)
    causes = Counter(f"{m.kind}: {m.failure_type}/{m.root_cause or m.failure_subtype or '-'}" for m in memories)
    out: dict[str, Any] = {
        "store": redact(str(store_path), address=str(store_path)), "memories": len(memories),   # no password
        "projects": {ns: dict(c) for ns, c in sorted(projects.items())},
        "causes": causes.most_common(TOP),
        "false_positive_memories": [
            {"memory_id": m.id, "namespace": m.namespace, "fix": m.after, "false_positives": m.counters.false_positives,
             "uses": m.counters.uses} for m in sorted(memories, key=lambda m: -m.counters.false_positives)[:TOP]
            if m.counters.false_positives]}
    path = Path(audit_path) if audit_path else Path(f"{store_path}.audit.db")
    out["decisions"] = _decisions(path, by_id, window) if path.is_file() else None
    out["audit"] = str(path) if path.is_file() else None
    return out


def memory_decisions(store_path: str, memory_id: int, audit_path: str | None = None, *,
                     limit: int = 50) -> list[dict[str, Any]] | None:
    """The gate's decisions that put memory ``memory_id`` before an agent (injected it, or asked about
    it), newest first, at most ``limit``, each with what the agent answered; None without an audit log
    (``STORE.audit.db``, or ``audit_path``)."""
    check_int(memory_id, "memory_id", low=1, where="memory decisions")
    path = Path(audit_path) if audit_path else Path(f"{store_path}.audit.db")
    if not path.is_file():
        return None
    out: list[dict[str, Any]] = []
    with AuditLog(path, create=False) as log:
        for rec in log.decisions():
            injected = memory_id in (rec["payload_ids"] or ())
            asked = rec["action"] == "ask_feedback" and rec["lead_id"] == memory_id
            if not (injected or asked):
                continue
            out.append({"decision_id": rec["decision_id"], "project": log.namespace_of(rec["decision_id"]) or "",
                        "action": "ask" if asked and not injected else agent_action(rec["action"]),
                        "gate_action": rec["action"], "resolution": rec["resolution"] or "",
                        "lead": rec["lead_id"] == memory_id, "reward": rec["reward"],
                        "feedback": sorted(k for k, on in (rec["feedback"] or {}).items() if on)})
    return out[::-1][:limit]


def _decisions(path: Path, by_id: dict, window: int) -> dict[str, Any]:
    mix, windows, feedback, reuse = Counter(), [], Counter(), Counter()
    with AuditLog(path, create=False) as log:
        for i, rec in enumerate(log.decisions()):
            words = agent_action(rec["action"]) if rec["resolution"] != "unanswered" else "ask"
            mix[words] += 1
            if i % window == 0:
                windows.append(Counter())
            windows[-1][words] += 1
            for flag, on in (rec["feedback"] or {}).items():
                if flag in FEEDBACK and on:
                    feedback[flag] += 1
            home = log.namespace_of(rec["decision_id"]) or ""
            shown = rec["payload_ids"] or ([rec["lead_id"]] if rec["lead_id"] is not None else [])
            for memory_id in dict.fromkeys(shown):
                memory = by_id.get(memory_id)
                if memory is not None and home and memory.namespace != home:
                    reuse[(memory.namespace, home)] += 1
    return {"total": sum(mix.values()), "mix": dict(mix), "window": window,
            "windows": [dict(w) for w in windows], "feedback": dict(feedback),
            "reuse": [{"from": a, "in": b, "decisions": n} for (a, b), n in reuse.most_common()]}


def _blocks(m: dict[str, Any], images: list[str]) -> list[tuple]:
    doc: list[tuple] = [("h1", "What the store learned"),
                        ("p", f"Store `{m['store']}`: {m['memories']} memories in {len(m['projects'])} projects.")]
    doc.append(("h2", "Memories per project"))
    doc.append(("table", ["project", "memories", "unverified", "failed directions", "uses", "false positives"],
                [[ns, *(str(c.get(k, 0)) for k in ("memories", "unverified", "negative", "uses", "false_positives"))]
                 for ns, c in m["projects"].items()]))
    doc.append(("h2", "Causes"))
    doc.append(("table", ["cause", "memories"], [[cause, str(n)] for cause, n in m["causes"]]))
    d = m["decisions"]
    doc.append(("h2", "What the gate told the agents"))
    if d is None:
        doc.append(("p", "No audit log beside the store (`--audit PATH`): the gate's decisions are not shown."))
    else:
        doc.append(("p", f"{d['total']} decisions: " + ", ".join(f"{k} {v}" for k, v in sorted(d["mix"].items()))
                    + "; feedback: " + (", ".join(f"{k} {v}" for k, v in sorted(d["feedback"].items())) or "none")
                    + "."))
        doc += [("img", name, f"what the agents were told, per {d['window']} decisions") for name in images]
        doc.append(("h2", "Reused from another project"))
        doc.append(("table", ["memory of", "shown or asked in", "decisions"],
                    [[r["from"], r["in"], str(r["decisions"])] for r in d["reuse"]]) if d["reuse"] else
                   ("p", "No decision showed or asked about another project's memory."))
    doc.append(("h2", "Memories a false positive came back on"))
    doc.append(("table", ["memory", "project", "fix", "false positives", "uses"],
                [[f"#{r['memory_id']}", r["namespace"], f"`{r['fix']}`", str(r["false_positives"]), str(r["uses"])]
                 for r in m["false_positive_memories"]]) if m["false_positive_memories"] else ("p", "None."))
    return doc


def _plot(m: dict[str, Any]) -> dict[str, bytes]:
    """``action_mix``: the share of inject / ask / none per window of decisions; ``{}`` without matplotlib
    or decisions."""
    d = m["decisions"]
    if not d or not d["windows"]:
        return {}
    try:
        import matplotlib
        matplotlib.use("Agg", force=True)
        import matplotlib.pyplot as plt
    except ImportError:
        return {}
    words = ("inject", "ask", "none")
    x = list(range(1, len(d["windows"]) + 1))
    shares = [[100 * w.get(k, 0) / max(sum(w.values()), 1) for w in d["windows"]] for k in words]
    with plt.rc_context({"font.size": 9}):
        fig, ax = plt.subplots(figsize=(7, 3.5), layout="constrained")
        ax.stackplot(x, shares, labels=words)
        ax.set(xlabel=f"window of {d['window']} decisions", ylabel="% of decisions", ylim=(0, 100))
        ax.legend(loc="upper right")
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=100, metadata={"Software": None})
        plt.close(fig)
    return {"action_mix": buf.getvalue()}


def write_store_report(store_path: str, out: str, *, audit_path: str | None = None, window: int = 20) -> dict:
    """Write ``report.md``, ``report.html``, ``report.json`` (and ``action_mix.png``) into ``out``; the metrics."""
    m = store_metrics(store_path, audit_path, window=window)
    images = _plot(m)
    folder = output_dir(out)
    for name, data in images.items():
        write_atomic(folder / f"{name}.png", data)
    write_atomic(folder / "report.json", json.dumps(m, indent=1, ensure_ascii=False) + "\n")
    doc = _blocks(m, list(images))
    write_atomic(folder / "report.md", blocks_markdown(doc))
    write_atomic(folder / "report.html", blocks_html(doc, images, "repairmem: what the store learned"))
    return m
