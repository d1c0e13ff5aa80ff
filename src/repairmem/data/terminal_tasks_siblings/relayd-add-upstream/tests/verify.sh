set -eu
cmp -s relayd "$TESTS_DIR/orig/relayd" || { echo "relayd was changed"; exit 1; }
out=$(./relayd --check 2>&1) || { echo "$out"; exit 1; }
python3 - <<'EOF'
import tomllib
with open("etc/relayd.toml", "rb") as fh:
    config = tomllib.load(fh)
expected = {'server': {'listen': '127.0.0.1', 'port': 8080, 'max_clients': 16, 'idle_timeout_s': 30}, 'log': {'level': 'info', 'file': 'var/relayd.log'}, 'upstreams': {'primary': '10.0.0.5:7000', 'backup': '10.0.0.7:7000'}}
assert config == expected, config
EOF
echo ok
