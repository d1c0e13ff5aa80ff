set -eu
test "$(cat blocklist.txt)" = "$(printf '10.0.0.5\n10.0.0.9\n192.168.1.20')" || { echo "wrong content:"; cat blocklist.txt; exit 1; }
echo ok
