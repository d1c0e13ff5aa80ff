import re

DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def is_iso_date(text):
    """True iff text is exactly YYYY-MM-DD with month 01-12 and day 01-31."""
    return DATE.search(text) is not None
