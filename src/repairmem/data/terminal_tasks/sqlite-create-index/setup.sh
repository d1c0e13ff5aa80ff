python3 - <<'EOF'
import sqlite3
con = sqlite3.connect("shop.db")
con.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL, total REAL NOT NULL)")
con.executemany("INSERT INTO orders VALUES (?, ?, ?)", [(i, (i * 37) % 101, round(i * 1.25, 2)) for i in range(1, 1001)])
con.commit()
EOF
