from inventory import add_item


def test_new_lists():
    assert add_item("apple") == ["apple"]
    assert add_item("pear") == ["pear"]


def test_given_list():
    basket = ["milk"]
    assert add_item("eggs", basket) is basket
    assert basket == ["milk", "eggs"]
