import pytest

from validate import is_iso_date


@pytest.mark.parametrize("text", ["2024-01-01", "1999-12-31", "2023-02-28", "2020-10-09", "0001-01-30"])
def test_valid(text):
    assert is_iso_date(text) is True


@pytest.mark.parametrize("text", ["2024-13-01", "2024-00-10", "2024-01-32", "2024-01-00", "2024-1-01",
                                  "24-01-01", "x2024-01-01", "2024-01-01x", " 2024-01-01", "2024-01-01\n",
                                  "2024/01/01", "", "2024-01-011"])
def test_invalid(text):
    assert is_iso_date(text) is False
