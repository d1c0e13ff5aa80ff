python3 - <<'EOF'
import sqlite3
con = sqlite3.connect("file:bank.db?mode=ro", uri=True)
cols = {r[1]: r for r in con.execute("PRAGMA table_info('accounts')")}
assert "status" in cols, "no column status"
_, _, kind, notnull, default, _ = cols["status"]
assert kind.upper() == "TEXT" and notnull == 1 and default in ("'active'", '"active"'), cols["status"]
rows = con.execute("SELECT id, owner, balance, status FROM accounts ORDER BY id").fetchall()
assert rows == [(1, "ann", 120.0, "active"), (2, "bob", 0.0, "closed"), (3, "cid", 5.5, "active"),
                (4, "dee", 0.0, "closed"), (5, "eve", 0.01, "active")], rows
print("ok")
EOF
