set -eu
grep -qx 'version = "0.2.0"' greeter/pyproject.toml || { echo "pyproject version is not 0.2.0"; exit 1; }
test "$(ls dist)" = "greeter-0.2.0-py3-none-any.whl" || { echo "dist/ holds: $(ls dist)"; exit 1; }
python3 - <<'EOF'
import zipfile
with zipfile.ZipFile("dist/greeter-0.2.0-py3-none-any.whl") as z:
    names = z.namelist()
    assert "greeter/__init__.py" in names, names
    meta = z.read("greeter-0.2.0.dist-info/METADATA").decode()
    assert "\nVersion: 0.2.0\n" in meta, meta
print("ok")
EOF
