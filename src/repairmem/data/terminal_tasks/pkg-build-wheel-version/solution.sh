set -e
sed -i 's/^version = "0.1.0"/version = "0.2.0"/' greeter/pyproject.toml
python3 -m pip wheel -q --no-deps --no-index --no-build-isolation ./greeter -w dist
