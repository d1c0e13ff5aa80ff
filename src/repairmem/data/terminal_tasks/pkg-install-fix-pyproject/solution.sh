set -e
sed -i 's/packages = \["textstat"\]/packages = ["textstats"]/' textstats/pyproject.toml
python3 -m pip install -q --no-index --no-build-isolation --target vendor ./textstats
