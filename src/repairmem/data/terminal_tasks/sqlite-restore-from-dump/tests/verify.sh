python3 - <<'EOF'
import sqlite3
con = sqlite3.connect("file:app.db?mode=ro", uri=True)
assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
tables = sorted(r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'"))
assert tables == ["customers", "invoices"], tables
assert con.execute("SELECT * FROM customers ORDER BY id").fetchall() == [(1, "Acme"), (2, "Globex"), (3, "Initech")]
rows = con.execute("SELECT id, customer_id, amount FROM invoices ORDER BY id").fetchall()
assert rows == [(i, 1 + i % 3, i * 10.5) for i in range(1, 21)], rows
print("ok")
EOF
