python3 - <<'EOF'
from pathlib import Path
p = Path("tallyq/money.py")
p.write_text(p.read_text().replace(
    'whole, frac = divmod(cents, 100)\n    return f"{whole}.{frac:02d}"',
    'sign = "-" if cents < 0 else ""\n    whole, frac = divmod(abs(cents), 100)\n'
    '    return f"{sign}{whole}.{frac:02d}"'))
EOF
./dev test
