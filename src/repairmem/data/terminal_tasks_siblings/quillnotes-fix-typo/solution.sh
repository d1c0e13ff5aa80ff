set -e
sed -i 's/recieve/receive/' docs/usage.md
git commit -q -s -am "docs: fix the spelling of receive"
