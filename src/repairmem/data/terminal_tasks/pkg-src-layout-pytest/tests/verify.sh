set -eu
cmp -s calcproj/tests/test_ops.py "$TESTS_DIR/test_ops.py" || { echo "tests were changed"; exit 1; }
test -f calcproj/src/calc/ops.py || { echo "code was moved"; exit 1; }
test -z "$(find calcproj -name conftest.py)" || { echo "conftest.py is not allowed"; exit 1; }
test -z "$(find calcproj -path '*/calc/ops.py' -not -path 'calcproj/src/*')" || { echo "code was copied"; exit 1; }
cd calcproj
out=$(python3 -m pytest -q -p no:cacheprovider 2>&1) || { echo "$out"; exit 1; }
echo "$out" | grep -q '2 passed' || { echo "$out"; exit 1; }
echo ok
