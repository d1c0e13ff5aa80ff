"""pollster: count votes in plain-text ballot files."""
__all__ = ["VERSION"]

try:
    from ._version import VERSION
except ModuleNotFoundError:
    raise ImportError("pollster/_version.py is missing: it is generated, run python3 tools/gen_version.py "
                      "first") from None
