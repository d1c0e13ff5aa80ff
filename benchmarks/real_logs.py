"""Terminal classifier on real error logs: family / root-cause accuracy on tests/data/real_logs.

Loads ``tests/data/real_logs/logs.jsonl`` (real error output quoted from public issue threads, each
labelled with the cause the thread established, see that directory's README), runs
``classify_terminal(log, command or None)`` on every record and reports:

* family accuracy over all records; a record labelled family ``other`` (outside the taxonomy: git,
  npm, docker, segfaults) counts as correct when the classifier answers family ``unknown``;
* family accuracy over the in-taxonomy records only;
* root-cause accuracy over the records whose labelled root cause is in ``ROOT_CAUSES`` for their
  family (both the family and the root cause must match);
* look-alike abstention: of the records labelled root cause ``other`` (the thread's cause is none of
  the family's classes, e.g. a ModuleNotFoundError from a missing dependency, a shell "syntax error"
  from CRLF line endings), how many got root cause ``unknown`` rather than a specific class;
* per-family rows, how many records got root cause ``unknown``, the confidence distribution (all
  records, and split by whether the root cause was right), and every misclassified id with the
  expected and the returned labels.

    python benchmarks/real_logs.py
    python benchmarks/real_logs.py --json real_logs_result.json
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

from repairmem.classify.terminal import FAMILIES, ROOT_CAUSES, classify_terminal

DEFAULT_DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "real_logs" / "logs.jsonl"
REQUIRED = ("id", "source", "source_kind", "command", "log", "family", "root_cause", "cause_note", "fix",
            "fix_verified_by")
OUTSIDE = "other"  # label for a family / root cause outside the taxonomy
CONF_BINS = ((0.0, 0.0, "0.00"), (0.0, 0.3, "(0.00,0.30)"), (0.3, 0.6, "[0.30,0.60)"),
             (0.6, 0.8, "[0.60,0.80)"), (0.8, 1.01, "[0.80,1.00]"))


def load(path: Path) -> list[dict]:
    records = []
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            rec = json.loads(line)
            missing = [k for k in REQUIRED if k not in rec]
            if missing:
                raise ValueError(f"{path}:{lineno}: missing keys {missing}")
            if rec["family"] != OUTSIDE and rec["family"] not in FAMILIES:
                raise ValueError(f"{path}:{lineno}: unknown family {rec['family']!r}")
            records.append(rec)
    ids = [r["id"] for r in records]
    if len(set(ids)) != len(ids):
        raise ValueError(f"{path}: duplicate ids")
    return records


def conf_bin(c: float) -> str:
    if c == 0.0:
        return CONF_BINS[0][2]
    for lo, hi, name in CONF_BINS[1:]:
        if lo <= c < hi:
            return name
    return CONF_BINS[-1][2]


def rc_in_taxonomy(rec: dict) -> bool:
    return rec["family"] in ROOT_CAUSES and rec["root_cause"] in ROOT_CAUSES[rec["family"]]


def evaluate(records: list[dict]) -> dict:
    rows = []
    for rec in records:
        d = classify_terminal(rec["log"], rec["command"] or None)
        fam_ok = d.family == ("unknown" if rec["family"] == OUTSIDE else rec["family"])
        rc_eligible = rc_in_taxonomy(rec)
        rc_ok = rc_eligible and fam_ok and d.root_cause == rec["root_cause"]
        rows.append({"id": rec["id"], "expected_family": rec["family"], "expected_root_cause": rec["root_cause"],
                     "family": d.family, "root_cause": d.root_cause, "confidence": d.confidence, "rule": d.rule,
                     "family_ok": fam_ok, "rc_eligible": rc_eligible, "rc_ok": rc_ok})

    n = len(rows)
    in_tax = [r for r in rows if r["expected_family"] != OUTSIDE]
    eligible = [r for r in rows if r["rc_eligible"]]
    lookalike = [r for r in rows if r["expected_family"] != OUTSIDE and r["expected_root_cause"] == OUTSIDE]
    outside = [r for r in rows if r["expected_family"] == OUTSIDE]

    per_family = []
    by_fam: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by_fam[r["expected_family"]].append(r)
    for fam in [f for f in FAMILIES if f in by_fam] + ([OUTSIDE] if OUTSIDE in by_fam else []):
        rs = by_fam[fam]
        el = [r for r in rs if r["rc_eligible"]]
        per_family.append({
            "family": fam, "n": len(rs), "family_correct": sum(r["family_ok"] for r in rs),
            "rc_eligible": len(el), "rc_correct": sum(r["rc_ok"] for r in el),
            "rc_unknown": sum(r["root_cause"] == "unknown" for r in rs),
            "mean_confidence": round(sum(r["confidence"] for r in rs) / len(rs), 3),
            "got_families": dict(Counter(r["family"] for r in rs).most_common()),
        })

    def dist(rs: list[dict]) -> dict[str, int]:
        c = Counter(conf_bin(r["confidence"]) for r in rs)
        return {name: c.get(name, 0) for _, _, name in CONF_BINS}

    misclassified = [
        {"id": r["id"], "expected": f"{r['expected_family']}/{r['expected_root_cause']}",
         "got": f"{r['family']}/{r['root_cause']}", "confidence": r["confidence"], "rule": r["rule"]}
        for r in rows if not r["family_ok"] or (r["rc_eligible"] and not r["rc_ok"])
    ]
    return {
        "n": n,
        "family_accuracy": _ratio(sum(r["family_ok"] for r in rows), n),
        "family_accuracy_in_taxonomy": _ratio(sum(r["family_ok"] for r in in_tax), len(in_tax)),
        "outside_taxonomy_answered_unknown": _ratio(sum(r["family_ok"] for r in outside), len(outside)),
        "root_cause_accuracy": _ratio(sum(r["rc_ok"] for r in eligible), len(eligible)),
        "lookalike_abstention": _ratio(sum(r["root_cause"] == "unknown" for r in lookalike), len(lookalike)),
        "root_cause_unknown": sum(r["root_cause"] == "unknown" for r in rows),
        "confidence_all": dist(rows),
        "confidence_rc_correct": dist([r for r in eligible if r["rc_ok"]]),
        "confidence_rc_wrong": dist([r for r in eligible if not r["rc_ok"]]),
        "per_family": per_family,
        "misclassified": misclassified,
        "results": rows,
    }


def _ratio(k: int, n: int) -> dict:
    return {"correct": k, "n": n, "accuracy": round(k / n, 4) if n else None}


def _fmt(r: dict) -> str:
    return f"{r['correct']}/{r['n']} = {r['accuracy']:.1%}" if r["n"] else "n/a"


def report(res: dict, data: Path) -> str:
    out = [f"real logs: {res['n']} records from {data}", ""]
    headline = (
        ("family accuracy (all; 'other' counts as right when answered 'unknown')", _fmt(res["family_accuracy"])),
        ("family accuracy (in-taxonomy records only)", _fmt(res["family_accuracy_in_taxonomy"])),
        ("outside-taxonomy records answered family 'unknown'", _fmt(res["outside_taxonomy_answered_unknown"])),
        ("root-cause accuracy (labelled root cause in ROOT_CAUSES)", _fmt(res["root_cause_accuracy"])),
        ("look-alike abstention (labelled root cause 'other' -> 'unknown')", _fmt(res["lookalike_abstention"])),
        ("records with root cause 'unknown'", f"{res['root_cause_unknown']}/{res['n']}"),
    )
    width = max(len(label) for label, _ in headline) + 1
    out.extend(f"{label + ':':<{width}} {value}" for label, value in headline)
    out.append("")
    out.append("| family | n | family ok | rc eligible | rc ok | rc unknown | mean conf | classifier said |")
    out.append("|---|---|---|---|---|---|---|---|")
    for row in res["per_family"]:
        said = ", ".join(f"{k} {v}" for k, v in row["got_families"].items())
        out.append(f"| {row['family']} | {row['n']} | {row['family_correct']} | {row['rc_eligible']} | "
                   f"{row['rc_correct']} | {row['rc_unknown']} | {row['mean_confidence']:.2f} | {said} |")
    out.append("")
    out.append("confidence distribution | " + " | ".join(name for _, _, name in CONF_BINS))
    for label, key in (("all records", "confidence_all"), ("root cause right", "confidence_rc_correct"),
                       ("root cause wrong", "confidence_rc_wrong")):
        out.append(f"{label:<23} | " + " | ".join(str(v) for v in res[key].values()))
    out.append("")
    out.append(f"misclassified ({len(res['misclassified'])}; family wrong, "
               "or root cause wrong where it is in the taxonomy):")
    for m in res["misclassified"]:
        out.append(f"  {m['id']}: expected {m['expected']:<44} got {m['got']:<40} "
                   f"conf {m['confidence']:.2f}  {m['rule']}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="JSONL file of labelled real logs")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the full result as JSON to PATH")
    args = parser.parse_args(argv)
    records = load(args.data)
    res = evaluate(records)
    print(report(res, args.data))
    if args.json:
        args.json.write_text(json.dumps(res, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"\nwrote {args.json}")
    shown = " ".join(argv if argv is not None else sys.argv[1:])
    print(f"\ncommand: python benchmarks/real_logs.py {shown}".rstrip())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
