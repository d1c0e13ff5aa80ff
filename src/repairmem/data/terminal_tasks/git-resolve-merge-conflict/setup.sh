set -e
git init -q -b main repo
cd repo
printf 'timeout = 30\nretries = 3\nmode = fast\n' > settings.conf
git add -A && git commit -qm "initial"
git checkout -q -b update
printf 'timeout = 60\nretries = 1\nmode = fast\n' > settings.conf
git commit -qam "raise timeout"
git checkout -q main
printf 'timeout = 30\nretries = 5\nmode = fast\n' > settings.conf
git commit -qam "more retries"
git merge update > /dev/null 2>&1 && exit 1 || true
test -f .git/MERGE_HEAD
