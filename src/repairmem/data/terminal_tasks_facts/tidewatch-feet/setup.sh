set -e
chmod +x check
git init -q -b main
git add -A
git commit -q -m "tidewatch 2.3.0"
git tag v2.3.0
