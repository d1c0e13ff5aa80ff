set -eu
expected=$(printf "Call Ann at [REDACTED] before 2024-05-01.\nBob's office: [REDACTED], ext. 12.\nOrder 1234-5678 shipped; invoice total 99.95.\nBackup line [REDACTED] or [REDACTED].")
test "$(cat notes.txt)" = "$expected" || { echo "wrong content:"; cat notes.txt; exit 1; }
echo ok
