python3 - <<'EOF'
import json, re
counts = {"2xx": 0, "3xx": 0, "4xx": 0, "5xx": 0}
for line in open("access.log"):
    m = re.search(r'" (\d{3}) ', line)
    if m:
        counts[m.group(1)[0] + "xx"] += 1
json.dump(counts, open("status.json", "w"))
EOF
