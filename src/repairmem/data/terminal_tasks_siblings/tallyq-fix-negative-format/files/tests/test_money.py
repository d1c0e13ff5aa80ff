from tallyq.money import apply_discount, format_cents, parse_amount


def test_parse_amount():
    assert parse_amount("12.5") == 1250
    assert parse_amount("-0.07") == -7
    assert parse_amount("1,234.50") == 123450


def test_format_cents():
    assert format_cents(123450) == "1234.50"
    assert format_cents(-5) == "-0.05"
    assert format_cents(-250) == "-2.50"


def test_apply_discount_rounds_half_up():
    assert apply_discount(1000, 10) == 900
    assert apply_discount(999, 15) == 849
    assert apply_discount(50, 1) == 49
