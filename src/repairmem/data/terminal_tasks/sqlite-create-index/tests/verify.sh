python3 - <<'EOF'
import sqlite3
con = sqlite3.connect("file:shop.db?mode=ro", uri=True)
cols = [r[2] for r in con.execute("PRAGMA index_info('idx_orders_customer')")]
assert cols == ["customer_id"], f"index idx_orders_customer covers {cols}"
table = con.execute("SELECT tbl_name FROM sqlite_master WHERE type='index' AND name='idx_orders_customer'").fetchone()
assert table == ("orders",), table
count, ids, customers, total = con.execute("SELECT count(*), sum(id), sum(customer_id), round(sum(total), 2) FROM orders").fetchone()
assert (count, ids, customers) == (1000, 500500, sum((i * 37) % 101 for i in range(1, 1001))), "data changed"
assert abs(total - round(sum(round(i * 1.25, 2) for i in range(1, 1001)), 2)) < 1e-6, "data changed"
plan = " ".join(str(r) for r in con.execute("EXPLAIN QUERY PLAN SELECT * FROM orders WHERE customer_id = 5"))
assert "idx_orders_customer" in plan, plan
print("ok")
EOF
