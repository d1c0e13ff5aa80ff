set -eu
test -f vendor/textstats/__init__.py || { echo "vendor/textstats not installed"; exit 1; }
ls -d vendor/textstats-1.0.0.dist-info > /dev/null || { echo "no dist-info: not installed by pip"; exit 1; }
cd "$TMPDIR"
out=$(PYTHONPATH="$WORKSPACE/vendor" python3 -c 'import textstats; print(textstats.__file__); print(textstats.word_count("a b c"), textstats.line_count("x\ny"))')
echo "$out" | head -1 | grep -q "^$WORKSPACE/vendor/textstats/" || { echo "imported from the wrong place: $out"; exit 1; }
test "$(echo "$out" | tail -1)" = "3 2" || { echo "wrong output: $out"; exit 1; }
echo ok
