python3 - <<'EOF'
import sqlite3
con = sqlite3.connect("file:app.db?mode=ro", uri=True)
rows = con.execute("SELECT id, email, name FROM users ORDER BY id").fetchall()
assert rows == [(1, "ann@example.com", "Ann"), (2, "bob@example.com", "Bob"), (4, "cid@example.com", "Cid"),
                (7, "dee@example.com", "Dee")], rows
indexes = {r[1]: r[2] for r in con.execute("PRAGMA index_list('users')")}
assert indexes.get("idx_users_email") == 1, f"no unique index idx_users_email: {indexes}"
assert [r[2] for r in con.execute("PRAGMA index_info('idx_users_email')")] == ["email"]
print("ok")
EOF
