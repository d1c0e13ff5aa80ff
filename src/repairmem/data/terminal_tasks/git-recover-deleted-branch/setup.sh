set -e
git init -q -b main repo
cd repo
echo v1 > app.txt
git add -A && git commit -qm "initial"
git checkout -q -b feature
echo 'FEATURE_FLAG=on' > flags.env
git add -A && git commit -qm "add feature flag"
echo 'FEATURE_LEVEL=2' >> flags.env
git commit -qam "tune feature flag"
git checkout -q main
echo v2 > app.txt
git commit -qam "bump app"
git branch -q -D feature
