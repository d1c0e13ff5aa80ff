set -e
printf '\n[tool.pytest.ini_options]\npythonpath = ["src"]\n' >> calcproj/pyproject.toml
