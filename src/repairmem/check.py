"""The one validation helper: type and range checks whose errors name what was wrong and where.

Every check returns the value it accepted and otherwise raises ``InvalidInputError`` with a
message of one form, ``"<where>: <name> must be <what><note>, got <value>"`` (``where`` and
``note`` optional), e.g. ``"episode q1: position must be an int >= 0, got -1"``. ``bool`` is never
accepted as a number although Python makes it an ``int``: ``True`` as a count is a bug.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

from .errors import InvalidInputError

__all__ = ["check_bool", "check_int", "check_number", "check_str"]


def _fail(got: str, name: str, expected: str, where: str, note: str) -> InvalidInputError:
    prefix = f"{where}: " if where else ""
    return InvalidInputError(f"{prefix}{name} must be {expected}{note}, got {got}")


def _bounds(low, high, low_open: bool, high_open: bool) -> str:
    if low is not None and high is not None:
        return f" in {'(' if low_open else '['}{low}, {high}{')' if high_open else ']'}"
    if low is not None:
        return f" {'>' if low_open else '>='} {low}"
    if high is not None:
        return f" {'<' if high_open else '<='} {high}"
    return ""


def _outside(value, low, high, low_open: bool, high_open: bool) -> bool:
    if low is not None and (value <= low if low_open else value < low):
        return True
    return high is not None and (value >= high if high_open else value > high)


def check_int(value: Any, name: str, *, low: int | None = None, high: int | None = None, high_open: bool = False,
              where: str = "", note: str = "") -> int:
    """``value`` if it is an ``int`` (not a bool) with low <= value <= high (``high_open``: < high)."""
    if isinstance(value, bool) or not isinstance(value, int) or _outside(value, low, high, False, high_open):
        raise _fail(repr(value), name, "an int" + _bounds(low, high, False, high_open), where, note)
    return value


def check_number(value: Any, name: str, *, low: float | None = None, high: float | None = None,
                 low_open: bool = False, high_open: bool = False, where: str = "", note: str = "") -> float:
    """``float(value)`` if ``value`` is a finite real number (not a bool) within the bounds.

    ``low_open``/``high_open`` make a bound exclusive: ``low=0, low_open=True`` reads "> 0".
    """
    if (isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value)
            or _outside(value, low, high, low_open, high_open)):
        raise _fail(repr(value), name, "a finite number" + _bounds(low, high, low_open, high_open), where, note)
    return float(value)


def check_bool(value: Any, name: str, *, where: str = "") -> bool:
    """``value`` if it is a ``bool`` (``0`` and ``1`` are not)."""
    if not isinstance(value, bool):
        raise _fail(repr(value), name, "a bool", where, "")
    return value


def check_str(value: Any, name: str, *, empty: bool = True, where: str = "", note: str = "") -> str:
    """``value`` if it is a ``str`` (and not empty unless ``empty``).

    A value of another type is reported by its type name, not its text (which may be a whole log).
    """
    if not isinstance(value, str):
        raise _fail(type(value).__name__, name, "a string" if empty else "a non-empty string", where, note)
    if not empty and not value:
        raise _fail("''", name, "a non-empty string", where, note)
    return value
