set -e
git init -q -b main repo
cd repo
printf 'RETRIES = 3\nTIMEOUT = 10\n' > config.py
git add -A && git commit -qm "initial"
printf 'RETRIES = 0\nTIMEOUT = 10\n' > config.py
git commit -qam "tune retries"
printf '# Service\nRun with python3 -m service.\n' > README.md
git add -A && git commit -qm "add docs"
