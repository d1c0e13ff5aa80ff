python3 - <<'EOF'
import json
got = json.load(open("settings.json"))
assert got == {"service": "billing", "port": 9000, "hosts": ["a.internal", "b.internal"],
               "retry": {"attempts": 3, "backoff": 1.5}, "url": "http://example.com/api", "enabled": True}, got
print("ok")
EOF
