set -eu
test "$(cat error_counts.txt)" = "$(printf 'E102 3\nE017 2\nE200 2\nE301 1')" || { echo "wrong content:"; cat error_counts.txt; exit 1; }
echo ok
