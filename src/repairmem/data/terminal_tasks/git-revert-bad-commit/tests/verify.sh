set -eu
cd repo
test -z "$(git status --porcelain)" || { echo "working tree not clean"; exit 1; }
test "$(git show HEAD:config.py)" = "$(printf 'RETRIES = 3\nTIMEOUT = 10\n')" || { echo "config.py not restored"; exit 1; }
git show HEAD:README.md | grep -q 'python3 -m service' || { echo "later commit lost"; exit 1; }
test "$(git rev-list --count HEAD)" -eq 4 || { echo "expected exactly one new commit"; exit 1; }
git log --format=%s | grep -qx 'tune retries' || { echo "history rewritten"; exit 1; }
git log --format=%s | grep -qx 'add docs'
echo ok
