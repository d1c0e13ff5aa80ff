python3 - <<'EOF'
import json
got = json.load(open("status.json"))
assert got == {"2xx": 4, "3xx": 1, "4xx": 3, "5xx": 0}, got
print("ok")
EOF
