set -eu
for f in dev conftest.py tools/make_fixtures.py tests/test_money.py tests/test_ledger.py; do
    cmp -s "$f" "$TESTS_DIR/orig/$f" || { echo "$f was changed"; exit 1; }
done
out=$(./dev test 2>&1) || { echo "$out"; exit 1; }
echo "$out" | grep -q '^5 passed' || { echo "$out"; exit 1; }
python3 - <<'EOF'
from tallyq.money import apply_discount
cases = [(1000, 10, 900), (999, 15, 849), (50, 1, 49), (149, 1, 148), (10, 50, 5), (1, 50, 0), (0, 30, 0)]
for cents, percent, expected in cases:
    assert apply_discount(cents, percent) == expected, (cents, percent, apply_discount(cents, percent))
EOF
echo ok
