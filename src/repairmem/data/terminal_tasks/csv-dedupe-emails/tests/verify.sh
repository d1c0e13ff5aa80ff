python3 - <<'EOF'
import csv
rows = list(csv.reader(open("contacts_clean.csv", newline="")))
assert rows == [["name", "email", "phone"], ["Ann Lee", "ann@example.com", "555-0100"],
                ["Bob Stone", "bob@example.com", "555-0101"], ["Cid Moss", " cid@example.org", "555-0103"],
                ["Dee Fox", "dee@example.net", "555-0105"]], rows
print("ok")
EOF
