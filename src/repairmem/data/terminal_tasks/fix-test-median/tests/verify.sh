set -eu
cmp -s test_stats.py "$TESTS_DIR/test_stats.py" || { echo "tests were changed"; exit 1; }
python3 - <<'EOF'
from stats import median
assert median([5]) == 5
assert median([1, 2, 3, 4, 100]) == 3
assert median([7, 1]) == 4
assert median([1.5, 2.5, 10, -1]) == 2.0
assert median((2, 2, 2, 9)) == 2
try:
    median([])
except ValueError:
    pass
else:
    raise AssertionError("median([]) must raise ValueError")
EOF
python3 -m pytest -q -p no:cacheprovider test_stats.py
