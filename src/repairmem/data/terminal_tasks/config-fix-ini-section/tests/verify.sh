set -eu
cmp -s app.py "$TESTS_DIR/app.py" || { echo "app.py was changed"; exit 1; }
test "$(python3 app.py)" = "listening on 127.0.0.1:8080" || { echo "wrong output"; exit 1; }
python3 - <<'EOF'
import configparser
c = configparser.ConfigParser()
c.read("config/app.ini")
assert c.get("logging", "level") == "info", "the [logging] section was lost"
EOF
echo ok
