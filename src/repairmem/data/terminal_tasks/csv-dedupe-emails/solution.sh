python3 - <<'EOF'
import csv
seen = set()
with open("contacts.csv", newline="") as src, open("contacts_clean.csv", "w", newline="") as dst:
    reader = csv.reader(src)
    writer = csv.writer(dst)
    writer.writerow(next(reader))
    for row in reader:
        key = row[1].strip().lower()
        if key not in seen:
            seen.add(key)
            writer.writerow(row)
EOF
