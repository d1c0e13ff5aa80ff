__version__ = "0.2.0"


def greet(name):
    return f"Hello, {name}!"
