"""Write the ledger fixture the tests read (python3 tools/make_fixtures.py OUT_DIR)."""
import json
import sys
from pathlib import Path

ENTRIES = [
    {"account": "cash", "kind": "sale", "amount": "1,250.00"},
    {"account": "cash", "kind": "refund", "amount": "50.25"},
    {"account": "card", "kind": "sale", "amount": "99.99"},
    {"account": "card", "kind": "sale", "amount": "0.01"},
    {"account": "card", "kind": "refund", "amount": "100.00"},
    {"account": "gift", "kind": "sale", "amount": "2,000.50"},
]
BALANCES = {"cash": 119975, "card": 0, "gift": 200050}

out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
(out / "ledger.json").write_text(json.dumps({"entries": ENTRIES, "balances": BALANCES,
                                             "total": sum(BALANCES.values())}, indent=1))
