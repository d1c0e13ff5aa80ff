set -eu
cd repo
test ! -e .git/MERGE_HEAD || { echo "merge not concluded"; exit 1; }
test -z "$(git status --porcelain)" || { echo "working tree not clean"; exit 1; }
test "$(git show HEAD:settings.conf)" = "$(printf 'timeout = 60\nretries = 5\nmode = fast')" || { echo "wrong resolution"; exit 1; }
test "$(git rev-list --parents -n 1 HEAD | wc -w)" -eq 3 || { echo "HEAD is not a merge commit"; exit 1; }
git merge-base --is-ancestor update HEAD
echo ok
