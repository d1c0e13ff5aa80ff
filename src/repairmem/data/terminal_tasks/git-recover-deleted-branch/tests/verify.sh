set -eu
cd repo
git rev-parse --verify -q refs/heads/feature > /dev/null || { echo "no branch feature"; exit 1; }
test "$(git log -1 --format=%s feature)" = "tune feature flag" || { echo "feature points at the wrong commit"; exit 1; }
test "$(git show feature:flags.env)" = "$(printf 'FEATURE_FLAG=on\nFEATURE_LEVEL=2')"
test "$(git symbolic-ref --short HEAD)" = main || { echo "not on main"; exit 1; }
test "$(git show main:app.txt)" = v2
test "$(git rev-list --count feature)" -eq 3
echo ok
