python3 - <<'EOF'
import json

def merge(a, b):
    out = dict(a)
    for key, value in b.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out

json.dump(merge(json.load(open("base.json")), json.load(open("override.json"))), open("merged.json", "w"), indent=2)
EOF
