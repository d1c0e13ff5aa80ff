python3 - <<'EOF'
import json
got = json.load(open("merged.json"))
expected = {"name": "shop", "debug": True,
            "db": {"host": "db.internal", "port": 5432, "options": {"ssl": True, "pool": 5}},
            "features": ["search"], "limits": None, "region": "eu"}
assert got == expected, got
print("ok")
EOF
