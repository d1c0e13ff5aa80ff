cat > validate.py <<'EOF'
import re

DATE = re.compile(r"\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])")


def is_iso_date(text):
    """True iff text is exactly YYYY-MM-DD with month 01-12 and day 01-31."""
    return DATE.fullmatch(text) is not None
EOF
