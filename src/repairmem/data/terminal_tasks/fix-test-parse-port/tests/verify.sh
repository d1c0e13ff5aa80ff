set -eu
cmp -s test_netcfg.py "$TESTS_DIR/test_netcfg.py" || { echo "tests were changed"; exit 1; }
python3 - <<'EOF'
from netcfg import parse_port
assert parse_port("1") == 1 and parse_port("65535") == 65535 and parse_port("443\n") == 443
for bad in ["0", "70000", "99999", "x1", "1.5"]:
    try:
        parse_port(bad)
    except ValueError:
        continue
    raise AssertionError(f"parse_port({bad!r}) must raise ValueError")
EOF
python3 -m pytest -q -p no:cacheprovider test_netcfg.py
