"""The validation helper: what it accepts, and error messages that name what and where."""

import math

import pytest

from repairmem.check import check_bool, check_int, check_number, check_str, parse_json
from repairmem.errors import InvalidInputError


def test_check_int_accepts_ints_in_range_and_returns_them():
    assert check_int(0, "n", low=0) == 0
    assert check_int(10, "n", low=0, high=10) == 10
    assert check_int(-5, "n") == -5


@pytest.mark.parametrize("value", [True, 1.0, "1", None, -1, 11])
def test_check_int_rejects_bools_non_ints_and_out_of_range(value):
    with pytest.raises(InvalidInputError, match=r"^where: n must be an int in \[0, 10\], got "):
        check_int(value, "n", low=0, high=10, where="where")


def test_messages_name_the_bounds():
    with pytest.raises(InvalidInputError, match=r"^passes must be an int >= 1, got 0$"):
        check_int(0, "passes", low=1)
    with pytest.raises(InvalidInputError, match=r"seed must be an int in \[0, 18446744073709551616\), got"):
        check_int(2**64, "seed", low=0, high=2**64, high_open=True)
    with pytest.raises(InvalidInputError, match=r"^limit must be an int >= 0 or None, got -1$"):
        check_int(-1, "limit", low=0, note=" or None")
    with pytest.raises(InvalidInputError, match=r"^timeout_s must be a finite number > 0, got 0$"):
        check_number(0, "timeout_s", low=0, low_open=True)
    with pytest.raises(InvalidInputError, match=r"^x must be a finite number <= 1, got 2$"):
        check_number(2, "x", high=1)


def test_check_number_returns_a_float_and_rejects_bool_nan_inf():
    assert check_number(1, "x") == 1.0 and isinstance(check_number(1, "x"), float)
    for bad in (True, math.nan, math.inf, -math.inf, "1", None):
        with pytest.raises(InvalidInputError, match="x must be a finite number"):
            check_number(bad, "x")


def test_check_bool_and_check_str():
    assert check_bool(False, "flag") is False
    with pytest.raises(InvalidInputError, match=r"^p: flag must be a bool, got 1$"):
        check_bool(1, "flag", where="p")
    assert check_str("", "s") == ""
    with pytest.raises(InvalidInputError, match=r"^s must be a non-empty string, got ''$"):
        check_str("", "s", empty=False)
    with pytest.raises(InvalidInputError, match=r"^log must be a string, got bytes$"):
        check_str(b"x" * 10_000, "log")     # the type, not a 10 kB repr


def test_check_str_refuses_a_lone_surrogate_by_position():
    assert check_str("naïve ✓", "s") == "naïve ✓"
    with pytest.raises(InvalidInputError, match=r"^memory: question must be valid Unicode text, got a lone surrogate "
                                                r"at index 2$"):
        check_str("ab\ud800c", "question", where="memory")


@pytest.mark.parametrize("text, message", [
    ('{"a": 1, "a": 2}', "duplicate key 'a'"),
    ('{"a": NaN}', "NaN is not a JSON number"),
    ('[Infinity]', "Infinity is not a JSON number"),
    ('{"a": "\\ud800"}', "lone surrogate"),
    ('{"\\udc00": 1}', "lone surrogate"),
    ('[' * 100_000 + ']' * 100_000, "nested deeper than 64 levels"),      # past Python's recursion limit
    ('[' * 65 + ']' * 65, "nested deeper than 64 levels"),                # within it, still refused
    ('9' * 5000, "unreadable JSON"),
    ('{"a": 1', "not valid JSON"),
    (b'"\xff"', "unreadable JSON"),
])
def test_parse_json_refuses_what_json_loads_lets_through_or_crashes_on(text, message):
    with pytest.raises(InvalidInputError, match=f"^line 3: .*{message}"):
        parse_json(text, where="line 3")


def test_parse_json_reads_ordinary_json():
    assert parse_json('{"a": [1, 2.5, "x", null, true], "b": {}}') == {"a": [1, 2.5, "x", None, True], "b": {}}
    assert parse_json('[' * 64 + ']' * 64) is not None
