set -eu
for f in dev conftest.py tools/make_fixtures.py tests/test_money.py tests/test_ledger.py; do
    cmp -s "$f" "$TESTS_DIR/orig/$f" || { echo "$f was changed"; exit 1; }
done
out=$(./dev test 2>&1) || { echo "$out"; exit 1; }
echo "$out" | grep -q '^5 passed' || { echo "$out"; exit 1; }
python3 - <<'EOF'
from tallyq.ledger import balance_by_account, total
entries = [{"account": "a", "kind": "sale", "amount": "10.00"},
           {"account": "a", "kind": "refund", "amount": "2.50"},
           {"account": "b", "kind": "refund", "amount": "1.00"}]
assert balance_by_account(entries) == {"a": 750, "b": -100}, balance_by_account(entries)
assert total(entries) == 650
EOF
echo ok
