python3 - <<'EOF'
import csv
rows = list(csv.reader(open("users.csv", newline="")))
assert rows == [["id", "name", "city"], ["2", "Alan Turing", "Wilmslow"], ["5", "Katherine Johnson, PhD", "Hampton"],
                ["7", "Grace Hopper", "Arlington"], ["11", "Ada Lovelace", "London"]], rows
print("ok")
EOF
