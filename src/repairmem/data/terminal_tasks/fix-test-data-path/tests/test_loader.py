from lib.loader import load_words


def test_words():
    assert load_words() == ["alpha", "beta", "gamma"]
