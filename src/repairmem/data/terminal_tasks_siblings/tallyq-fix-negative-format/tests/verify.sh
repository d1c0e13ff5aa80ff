set -eu
for f in dev conftest.py tools/make_fixtures.py tests/test_money.py tests/test_ledger.py; do
    cmp -s "$f" "$TESTS_DIR/orig/$f" || { echo "$f was changed"; exit 1; }
done
out=$(./dev test 2>&1) || { echo "$out"; exit 1; }
echo "$out" | grep -q '^5 passed' || { echo "$out"; exit 1; }
python3 - <<'EOF'
from tallyq.money import format_cents
cases = {0: "0.00", 7: "0.07", -7: "-0.07", -100: "-1.00", -123456: "-1234.56", 99999: "999.99"}
for cents, text in cases.items():
    assert format_cents(cents) == text, (cents, format_cents(cents))
EOF
echo ok
