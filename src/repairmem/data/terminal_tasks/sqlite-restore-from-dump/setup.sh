set -e
python3 - <<'EOF'
import sqlite3
con = sqlite3.connect("app.db")
con.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL)")
con.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers(id), amount REAL)")
con.executemany("INSERT INTO customers VALUES (?, ?)", [(1, "Acme"), (2, "Globex"), (3, "Initech")])
con.executemany("INSERT INTO invoices VALUES (?, ?, ?)", [(i, 1 + i % 3, i * 10.5) for i in range(1, 21)])
con.commit()
with open("backup.sql", "w") as fh:
    fh.write("\n".join(con.iterdump()) + "\n")
con.close()
with open("app.db", "r+b") as fh:
    fh.write(b"CORRUPTED PAGE " * 8)
EOF
