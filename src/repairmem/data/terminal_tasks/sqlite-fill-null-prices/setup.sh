python3 - <<'EOF'
import sqlite3
con = sqlite3.connect("inventory.db")
con.execute("CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT, category TEXT, price REAL)")
con.executemany("INSERT INTO products VALUES (?, ?, ?, ?)", [
    (1, "pen", "office", 1.50), (2, "stapler", "office", 7.25), (3, "paper", "office", None),
    (4, "mouse", "tech", 19.99), (5, "cable", "tech", 5.00), (6, "hub", "tech", 24.10),
    (7, "keyboard", "tech", None), (8, "mug", "kitchen", 8.00), (9, "kettle", "kitchen", None),
    (10, "lamp", "home", 30.00)])
con.commit()
EOF
