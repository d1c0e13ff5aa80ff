"""The prompt audit: proves that a rendered prompt does not contain the current example's reference.

MERIT's fourth causal check (Section 3.1): reference SQL, reference rows and corrected queries never
appear in a prompt. Runners call ``check_prompt`` on every prompt before it is sent; it fails closed
(raises ``PromptLeakError``) on any finding, and also when it is given nothing to check against.

What counts as a finding:

- the reference SQL, verbatim or reformatted: keywords and identifiers in any case, any whitespace
  (or none) between tokens, a trailing ``;`` or not. String literals must match exactly: the
  model's own attempt ``kind = 'Dog'`` against a reference ``kind = 'dog'`` is an observed wrong
  answer, not a leak;
- a reference row rendered as text in any of the usual ways (Python tuple/list repr, JSON, values
  joined by ``, ``, `` | ``, tab or a single space), for rows of two or more cells;
- the first rows of a multi-row, single-column result rendered as a list.

A lone scalar (one cell: ``3``, ``'France'``) is not checked on its own: it cannot be told apart from
the question, the schema or the model's own attempts, which legitimately contain such values.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Sequence

from ..check import check_str
from ..errors import PromptLeakError


@dataclass(frozen=True, slots=True)
class Finding:
    what: str       # "reference_sql" | "reference_row" | "reference_column"
    fragment: str   # the reference text that was found (shortened)
    offset: int     # where in the (folded) prompt it was found


def _fold(text: str) -> str:
    # whitespace only: values are case-sensitive, like the result comparison itself
    return " ".join(text.split())


def _cell(value: Any) -> str:
    if value is None:
        return "None"
    if isinstance(value, float) and value.is_integer():
        return repr(value)
    return str(value)


def _row_renderings(row: Sequence[Any]) -> list[str]:
    cells = [_cell(v) for v in row]
    forms = [repr(tuple(row)), repr(list(row)), json.dumps(list(row), default=str)]
    forms += [sep.join(cells) for sep in (", ", " | ", "|", "\t", " ")]
    return forms


_LITERAL = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"")
_WORD = re.compile(r"[A-Za-z0-9_.]+|\S")


def _sql_pattern(sql: str) -> re.Pattern:
    """Regex for ``sql`` up to case (outside literals) and whitespace between tokens."""
    parts, last = [], 0
    for lit in _LITERAL.finditer(sql):
        parts += [f"(?i:{re.escape(w)})" for w in _WORD.findall(sql[last:lit.start()])]
        parts.append(re.escape(lit.group(0)))
        last = lit.end()
    parts += [f"(?i:{re.escape(w)})" for w in _WORD.findall(sql[last:])]
    return re.compile(r"\s*".join(parts))


def find_leaks(prompt: str, *, reference_sql: str | None = None,
               reference_rows: Sequence[Sequence[Any]] | None = None) -> list[Finding]:
    """Every place the prompt contains the reference (empty list when clean)."""
    findings: list[Finding] = []
    folded = _fold(prompt)
    if reference_sql and reference_sql.strip():
        target = reference_sql.strip().rstrip(";").strip()
        match = _sql_pattern(target).search(prompt)
        if match:
            findings.append(Finding("reference_sql", target[:80], match.start()))
    rows = [tuple(r) for r in (reference_rows or [])]
    for row in rows:
        if len(row) < 2:
            continue
        for form in _row_renderings(row):
            at = folded.find(_fold(form))
            if _fold(form) and at >= 0:
                findings.append(Finding("reference_row", form[:80], at))
                break
    single = [r[0] for r in rows if len(r) == 1]
    if len(single) >= 2:
        head = single[:3]
        for form in _row_renderings(head):
            at = folded.find(_fold(form))
            if at >= 0:
                findings.append(Finding("reference_column", form[:80], at))
                break
    return findings


def check_prompt(prompt: str, *, reference_sql: str | None, reference_rows: Sequence[Sequence[Any]] | None,
                 where: str = "prompt") -> None:
    """Raise ``PromptLeakError`` if ``prompt`` leaks the reference; fail closed without a reference.

    ``where`` names the prompt (e.g. ``"spider_dev/417 step 3"``) in the error.
    """
    check_str(prompt, "prompt", where=where)
    if not (reference_sql and reference_sql.strip()):
        raise PromptLeakError(f"{where}: the prompt audit needs the reference SQL of the current example "
                              "to prove the prompt does not contain it; refusing to pass an unchecked prompt")
    findings = find_leaks(prompt, reference_sql=reference_sql, reference_rows=reference_rows)
    if findings:
        first = findings[0]
        raise PromptLeakError(f"{where}: prompt contains the {first.what.replace('_', ' ')} "
                              f"{first.fragment!r} (at character {first.offset}); aborting")
