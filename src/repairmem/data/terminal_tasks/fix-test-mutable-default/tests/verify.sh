set -eu
cmp -s test_inventory.py "$TESTS_DIR/test_inventory.py" || { echo "tests were changed"; exit 1; }
python3 - <<'EOF'
from inventory import add_item
a = add_item("x")
b = add_item("y")
assert a == ["x"] and b == ["y"] and a is not b
empty = []
assert add_item("z", empty) is empty and empty == ["z"]
EOF
python3 -m pytest -q -p no:cacheprovider test_inventory.py
