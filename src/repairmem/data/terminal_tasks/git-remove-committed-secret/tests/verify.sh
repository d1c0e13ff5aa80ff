set -eu
cd repo
test "$(git symbolic-ref --short HEAD)" = main
test -z "$(git rev-list main -- secrets.env)" || { echo "secrets.env is still in history"; exit 1; }
test "$(cat secrets.env)" = "API_KEY=sk-test-123456" || { echo "secrets.env must stay on disk"; exit 1; }
git show HEAD:.gitignore | grep -qx 'secrets.env' || { echo ".gitignore does not list secrets.env"; exit 1; }
git log --format=%s main | grep -qx 'add login' || { echo "commit 'add login' lost"; exit 1; }
git show HEAD:app.py | grep -q 'def login' || { echo "app.py change lost"; exit 1; }
test -z "$(git status --porcelain)" || { echo "working tree not clean"; exit 1; }
test "$(git rev-list --count HEAD)" -le 3
echo ok
