set -eu
cmp -s test_loader.py "$TESTS_DIR/test_loader.py" || { echo "tests were changed"; exit 1; }
test ! -e words.txt || { echo "words.txt must not be copied"; exit 1; }
test "$(cat lib/words.txt)" = "$(printf 'alpha\nbeta\n\ngamma')" || { echo "lib/words.txt changed"; exit 1; }
python3 -m pytest -q -p no:cacheprovider test_loader.py
cd "$TMPDIR"
WS="$WORKSPACE" python3 -c '
import os, sys
sys.path.insert(0, os.environ["WS"])
from lib.loader import load_words
assert load_words() == ["alpha", "beta", "gamma"], load_words()
'
echo ok
