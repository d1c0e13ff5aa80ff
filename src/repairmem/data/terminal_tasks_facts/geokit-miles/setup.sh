set -e
chmod +x ci
git init -q -b main
git add -A
git commit -q -m "geokit 1.4.2"
git tag v1.4.2
