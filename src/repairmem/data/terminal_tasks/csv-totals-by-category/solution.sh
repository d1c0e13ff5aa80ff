python3 - <<'EOF'
import csv, json
totals = {}
with open("sales.csv", newline="") as fh:
    for row in csv.DictReader(fh):
        totals[row["category"]] = totals.get(row["category"], 0.0) + float(row["amount"])
with open("totals.json", "w") as fh:
    json.dump({k: round(v, 2) for k, v in totals.items()}, fh, indent=2)
EOF
