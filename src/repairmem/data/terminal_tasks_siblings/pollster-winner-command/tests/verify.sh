set -eu
for f in VERSION tools/gen_version.py pollster/__init__.py pollster/count.py ballots/spring.txt; do
    cmp -s "$f" "$TESTS_DIR/orig/$f" || { echo "$f was changed"; exit 1; }
done
test "$(python3 -m pollster tally ballots/spring.txt)" = "$(printf 'maple: 3\noak: 3\nbirch: 2\ncedar: 1')" \
    || { echo "tally output changed"; exit 1; }
printf 'elm\nAsh\n\nash\nELM\nelm\nyew\n' > "$TMPDIR/autumn.txt"
test "$(python3 -m pollster winner ballots/spring.txt)" = "maple" || { echo "wrong winner for spring"; exit 1; }
test "$(python3 -m pollster winner "$TMPDIR/autumn.txt")" = "elm" || { echo "wrong winner for another file"; exit 1; }
echo ok
