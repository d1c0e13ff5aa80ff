set -eu
for f in VERSION tools/gen_version.py pollster/__init__.py pollster/count.py ballots/spring.txt; do
    cmp -s "$f" "$TESTS_DIR/orig/$f" || { echo "$f was changed"; exit 1; }
done
test "$(python3 -m pollster tally ballots/spring.txt)" = "$(printf 'maple: 3\noak: 3\nbirch: 2\ncedar: 1')" \
    || { echo "tally output changed"; exit 1; }
printf 'elm\nAsh\n\nash\nELM\nelm\nyew\n' > "$TMPDIR/autumn.txt"
test "$(python3 -m pollster --version)" = "pollster 2.3.1" || { echo "wrong --version output"; exit 1; }
echo 3.0.0 > VERSION && python3 tools/gen_version.py > /dev/null
test "$(python3 -m pollster --version)" = "pollster 3.0.0" || { echo "--version does not follow VERSION"; exit 1; }
echo ok
