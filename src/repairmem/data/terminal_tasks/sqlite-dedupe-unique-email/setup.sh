python3 - <<'EOF'
import sqlite3
con = sqlite3.connect("app.db")
con.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT NOT NULL, name TEXT)")
con.executemany("INSERT INTO users VALUES (?, ?, ?)", [
    (1, "ann@example.com", "Ann"), (2, "bob@example.com", "Bob"), (3, "ann@example.com", "Ann 2"),
    (4, "cid@example.com", "Cid"), (5, "bob@example.com", "Bob 2"), (6, "bob@example.com", "Bob 3"),
    (7, "dee@example.com", "Dee")])
con.commit()
EOF
