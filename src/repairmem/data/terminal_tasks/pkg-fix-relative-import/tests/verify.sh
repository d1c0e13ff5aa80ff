set -eu
cmp -s tool/helpers.py "$TESTS_DIR/helpers.py" || { echo "tool/helpers.py was changed"; exit 1; }
test "$(python3 -m tool.cli 3 4)" = "3 + 4 = 7" || { echo "wrong output"; exit 1; }
test "$(python3 -m tool.cli 10 -2)" = "10 + -2 = 8" || { echo "wrong output"; exit 1; }
test ! -e helpers.py || { echo "do not copy helpers.py"; exit 1; }
echo ok
