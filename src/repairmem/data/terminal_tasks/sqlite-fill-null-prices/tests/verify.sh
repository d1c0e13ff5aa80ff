python3 - <<'EOF'
import sqlite3
con = sqlite3.connect("file:inventory.db?mode=ro", uri=True)
rows = con.execute("SELECT id, name, category, price FROM products ORDER BY id").fetchall()
expected = [(1, "pen", "office", 1.50), (2, "stapler", "office", 7.25), (3, "paper", "office", 4.38),
            (4, "mouse", "tech", 19.99), (5, "cable", "tech", 5.00), (6, "hub", "tech", 24.10),
            (7, "keyboard", "tech", 16.36), (8, "mug", "kitchen", 8.00), (9, "kettle", "kitchen", 8.00),
            (10, "lamp", "home", 30.00)]
assert len(rows) == len(expected), rows
for got, want in zip(rows, expected):
    assert got[:3] == want[:3] and got[3] is not None and abs(got[3] - want[3]) < 1e-9, (got, want)
print("ok")
EOF
