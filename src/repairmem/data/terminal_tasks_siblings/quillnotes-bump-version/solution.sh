set -e
sed -i 's/^version = "0.4.0"$/version = "0.5.0"/' quill.toml
git commit -q -s -am "release 0.5.0"
