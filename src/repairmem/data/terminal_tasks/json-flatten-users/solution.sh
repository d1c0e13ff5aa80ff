python3 - <<'EOF'
import csv, json
users = sorted(json.load(open("users.json")), key=lambda u: u["id"])
with open("users.csv", "w", newline="") as fh:
    writer = csv.writer(fh)
    writer.writerow(["id", "name", "city"])
    for u in users:
        writer.writerow([u["id"], u["name"], u["address"]["city"]])
EOF
