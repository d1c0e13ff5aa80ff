python3 - <<'EOF'
import sqlite3
con = sqlite3.connect("bank.db")
con.execute("CREATE TABLE accounts (id INTEGER PRIMARY KEY, owner TEXT NOT NULL, balance REAL NOT NULL)")
con.executemany("INSERT INTO accounts VALUES (?, ?, ?)", [
    (1, "ann", 120.0), (2, "bob", 0.0), (3, "cid", 5.5), (4, "dee", 0), (5, "eve", 0.01)])
con.commit()
EOF
