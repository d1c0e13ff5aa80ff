set -e
cd repo
printf 'timeout = 60\nretries = 5\nmode = fast\n' > settings.conf
git add settings.conf
git commit -q --no-edit
