"""The one validation helper: type and range checks whose errors name what was wrong and where.

Every check returns the value it accepted and otherwise raises ``InvalidInputError`` with a
message of one form, ``"<where>: <name> must be <what><note>, got <value>"`` (``where`` and
``note`` optional), e.g. ``"episode q1: position must be an int >= 0, got -1"``. ``bool`` is never
accepted as a number although Python makes it an ``int``: ``True`` as a count is a bug.

``request_object`` and ``request_str`` read one field of a JSON request (the MCP server's and the
CLI's), with errors that start with the verb and name the field: ``recall: failure.log must be a
string, got int``.

``check_label`` is the charset of the labels a memory is filed under (``namespace``, ``failure_type``).

``parse_json`` is the one strict JSON reader for data that comes from a file or a database row:
duplicate keys, NaN/Infinity, lone surrogates and nesting deeper than ``MAX_JSON_DEPTH`` are errors.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import math
import numbers
import unicodedata
from typing import Any, Callable, Mapping

from .errors import InvalidInputError
from .untrusted import untrusted

__all__ = ["INT64_MAX", "MAX_JSON_DEPTH", "MAX_LABEL", "check_bool", "check_int", "check_label", "check_number",
           "check_str", "json_type", "parse_json", "request_error", "request_fields", "request_object", "request_str"]

INT64_MAX = 2**63 - 1      # the largest integer SQLite (and PostgreSQL's BIGINT) can store
MAX_JSON_DEPTH = 64        # deeper nesting is never ours: a deeper document is refused, not recursed into
MAX_LABEL = 128            # characters of a namespace or failure type


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
    """``value`` if it is a ``str`` of valid Unicode text (and not empty unless ``empty``).

    A value of another type is reported by its type name, not its text (which may be a whole log).
    A lone surrogate (``"\\ud800"`` in JSON) is refused: no UTF-8 file or database can store it.
    """
    if not isinstance(value, str):
        raise _fail(type(value).__name__, name, "a string" if empty else "a non-empty string", where, note)
    if not empty and not value:
        raise _fail("''", name, "a non-empty string", where, note)
    surrogate = _lone_surrogate(value)
    if surrogate is not None:
        raise _fail(f"a lone surrogate at index {surrogate}", name, "valid Unicode text", where, note)
    return value


def check_label(value: Any, name: str, *, where: str = "") -> str:
    """``value`` if it is a label: 1 to ``MAX_LABEL`` printable characters (no control, format,
    unassigned or separator character but the space), no space at either end, and nothing
    ``untrusted`` would escape (no chat-template marker). The error names the offending character,
    never echoes the text."""
    check_str(value, name, empty=False, where=where)
    expected = f"a label (1 to {MAX_LABEL} printable characters, no chat-template marker)"
    problem = (f"{len(value)} characters" if len(value) > MAX_LABEL else
               "a space at one end" if value != value.strip(" ") else None)
    for i, ch in enumerate(value if problem is None else ""):
        if ch != " " and unicodedata.category(ch)[0] in "CZ":
            problem = f"U+{ord(ch):04X} at index {i}"
            break
    if problem is None and untrusted(value, own_turn=True) != value:
        problem = "a chat-template marker"
    if problem is not None:
        raise _fail(problem, name, expected, where, "")
    return value


def _lone_surrogate(text: str) -> int | None:
    """Index of the first lone surrogate in ``text``, or None (the common ASCII case costs one scan)."""
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc.start
    return None


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        duplicate = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise InvalidInputError(f"duplicate key {duplicate!r} in a JSON object")
    return out


def json_type(value: Any) -> str:
    """How JSON calls the type of a decoded ``value`` ("an object", "null", ...), for error messages."""
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null",
            int: "a number", float: "a number"}.get(type(value), type(value).__name__)


def _no_constant(name: str) -> None:
    raise InvalidInputError(f"{name} is not a JSON number")


def plain_json(value: Any, convert: Callable[[Any], Any] | None = None) -> Any:
    """``value`` as plain JSON data, the one way out of the process: mappings (keys as strings),
    lists for tuples and arrays, sorted lists for sets, NumPy scalars as Python numbers, an enum's
    value, a dataclass's fields, bytes as ``{"blob_hex"}``, and None for a non-finite float (JSON
    has no NaN). ``convert`` is applied to each value first (the CLI's memories as their records)."""
    if convert is not None:
        value = convert(value)
    if isinstance(value, Mapping):
        return {str(k): plain_json(v, convert) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain_json(v, convert) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted(plain_json(v, convert) for v in value)
    if isinstance(value, bytes):                  # a BLOB from a query
        return {"blob_hex": value.hex()}
    if isinstance(value, enum.Enum):
        return plain_json(value.value, convert)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return plain_json(dataclasses.asdict(value), convert)
    if hasattr(value, "tolist") and not isinstance(value, str):     # NumPy arrays and scalars
        value = value.tolist()
        if isinstance(value, list):
            return plain_json(value, convert)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def parse_json(text: str | bytes, *, where: str = "") -> Any:
    """The JSON value of ``text``, read strictly; ``InvalidInputError`` naming ``where`` otherwise.

    Refused, unlike ``json.loads``: duplicate object keys (which one would win?), NaN and
    Infinity, integers too long for Python to read, strings holding a lone surrogate, and nesting
    deeper than ``MAX_JSON_DEPTH`` (a 100,000-deep document would exhaust the recursion limit).
    """
    prefix = f"{where}: " if where else ""
    if not isinstance(text, (str, bytes)):
        raise InvalidInputError(f"{prefix}expected JSON text, got {type(text).__name__}")
    try:
        value = json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        at = f"column {exc.colno}" if exc.lineno == 1 else f"line {exc.lineno} column {exc.colno}"
        raise InvalidInputError(f"{prefix}not valid JSON ({exc.msg} at {at})") from None
    except RecursionError:
        raise InvalidInputError(f"{prefix}JSON nested deeper than {MAX_JSON_DEPTH} levels") from None
    except InvalidInputError as exc:
        raise InvalidInputError(f"{prefix}{exc}") from None
    except (ValueError, UnicodeDecodeError) as exc:    # an integer of more than 4,300 digits, bytes not UTF-8
        raise InvalidInputError(f"{prefix}unreadable JSON ({exc})") from None
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if _lone_surrogate(item) is not None:
                raise InvalidInputError(f"{prefix}a JSON string holds a lone surrogate (not valid Unicode text)")
            continue
        if not isinstance(item, (dict, list)):
            continue
        if depth >= MAX_JSON_DEPTH:
            raise InvalidInputError(f"{prefix}JSON nested deeper than {MAX_JSON_DEPTH} levels")
        children = [*item.keys(), *item.values()] if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children)
    return value


def read_json_file(path, kind: type = dict, what: str = "JSON"):
    """The JSON file at ``path``, which must hold a ``kind`` (dict or list) at the top;
    ``InvalidInputError`` naming ``what`` and the file otherwise."""
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidInputError(f"cannot read {what} {path}: {exc}") from None
    if not isinstance(value, kind):
        raise InvalidInputError(f"{what} {path}: expected a JSON {'object' if kind is dict else 'array'}, "
                                f"got {type(value).__name__}")
    return value


def request_error(verb: str, message: str) -> InvalidInputError:
    return InvalidInputError(f"{verb}: {message}")


def request_object(value: Any, verb: str, name: str, allowed) -> dict:
    """``value`` as a dict whose keys are all in ``allowed``; the error names the first stranger."""
    if not isinstance(value, Mapping):
        what = "the request" if not name else name
        raise request_error(verb, f"{what} must be a JSON object, got {json_type(value)}")
    unknown = sorted(k for k in value if k not in allowed)
    if unknown:
        prefix = f"{name}." if name else ""
        raise request_error(verb, f"unknown field {prefix}{unknown[0]} (expected {', '.join(prefix + a for a in allowed)})")
    return dict(value)


def request_str(obj: dict, key: str, verb: str, *, prefix: str = "", required: bool = False,
                empty: bool = True, default: str | None = None) -> str | None:
    name = prefix + key
    if key not in obj or obj[key] is None:
        if required:
            raise request_error(verb, f"missing field {name}")
        return default
    try:
        return check_str(obj[key], name, empty=empty)
    except InvalidInputError as exc:
        raise request_error(verb, str(exc)) from None


def request_fields(value: Any, verb: str, spec: Mapping[str, bool], name: str = "failure") -> dict[str, str]:
    """The string fields of the object ``value`` named in ``spec`` (field -> required), "" when absent."""
    obj = request_object(value, verb, name, tuple(spec))
    return {k: request_str(obj, k, verb, prefix=f"{name}.", required=need, default="") for k, need in spec.items()}
