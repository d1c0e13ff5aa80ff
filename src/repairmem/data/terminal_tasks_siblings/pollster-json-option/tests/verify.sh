set -eu
for f in VERSION tools/gen_version.py pollster/__init__.py pollster/count.py ballots/spring.txt; do
    cmp -s "$f" "$TESTS_DIR/orig/$f" || { echo "$f was changed"; exit 1; }
done
test "$(python3 -m pollster tally ballots/spring.txt)" = "$(printf 'maple: 3\noak: 3\nbirch: 2\ncedar: 1')" \
    || { echo "tally output changed"; exit 1; }
printf 'elm\nAsh\n\nash\nELM\nelm\nyew\n' > "$TMPDIR/autumn.txt"
python3 - "$TMPDIR/autumn.txt" <<'EOF'
import json, subprocess, sys
for path, expected in [("ballots/spring.txt", {"maple": 3, "oak": 3, "birch": 2, "cedar": 1}),
                       (sys.argv[1], {"elm": 3, "ash": 2, "yew": 1})]:
    out = subprocess.run([sys.executable, "-m", "pollster", "tally", "--json", path], capture_output=True,
                         text=True, check=True).stdout
    assert json.loads(out) == expected, (path, out)
EOF
echo ok
