set -eu
cd repo
test -z "$(git status --porcelain)" || { echo "working tree not clean"; exit 1; }
expected=$(printf '# Plan\n1. collect data\n2. train model\n3. write report\n')
test "$(git show HEAD:notes/plan.md)" = "$expected" || { echo "notes/plan.md not committed with its old content"; exit 1; }
test "$(cat notes/plan.md)" = "$expected"
test "$(git rev-list --count HEAD)" -ge 5 || { echo "history was rewritten"; exit 1; }
test "$(git show HEAD:app.py)" = 'print("hello world")'
git show HEAD:notes/todo.md > /dev/null
echo ok
