set -eu
test "$(cat slowest.txt)" = "$(printf '/api/report?year=2024\n/api/search?q=x\n/api/orders/17')" || { echo "wrong content:"; cat slowest.txt; exit 1; }
echo ok
