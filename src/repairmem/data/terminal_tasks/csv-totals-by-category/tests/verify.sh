python3 - <<'EOF'
import json
got = json.load(open("totals.json"))
expected = {"books": 20.0, "games": 45.85, "music": 10.0, "garden": 3.1}
assert isinstance(got, dict) and set(got) == set(expected), got
for key, value in expected.items():
    assert isinstance(got[key], (int, float)) and abs(got[key] - value) < 1e-9, (key, got[key])
print("ok")
EOF
