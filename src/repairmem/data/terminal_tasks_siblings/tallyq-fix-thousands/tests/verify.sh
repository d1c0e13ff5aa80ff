set -eu
for f in dev conftest.py tools/make_fixtures.py tests/test_money.py tests/test_ledger.py; do
    cmp -s "$f" "$TESTS_DIR/orig/$f" || { echo "$f was changed"; exit 1; }
done
out=$(./dev test 2>&1) || { echo "$out"; exit 1; }
echo "$out" | grep -q '^5 passed' || { echo "$out"; exit 1; }
python3 - <<'EOF'
from tallyq.money import parse_amount
assert parse_amount("12,000,000.99") == 1200000099
assert parse_amount(" 7 ") == 700
for bad in ["1.234", "x", "1.2.3"]:
    try:
        parse_amount(bad)
    except ValueError:
        continue
    raise AssertionError(f"parse_amount({bad!r}) must raise ValueError")
EOF
echo ok
