import pytest

from netcfg import parse_port


def test_valid():
    assert parse_port("8080") == 8080
    assert parse_port(" 22 ") == 22


@pytest.mark.parametrize("bad", ["0", "65536", "abc", "", "-1"])
def test_invalid(bad):
    with pytest.raises(ValueError):
        parse_port(bad)
