"""Credentials in memory text: one masking pass over everything a memory holds, before anything is
stored, embedded, indexed, exported or returned.

A command, a log, a fix, a task or a reason an agent records may carry a credential it ran with. A
memory is shown to other sessions and exported, so ``masked(obj)`` walks every string of an
``Episode`` (question, context, method, each attempt's text, error and subtype), a ``MemoryVariant``
(its texts, its signatures whatever their shape, its provenance), or any dict or list (history rows),
and replaces each credential with ``<redacted:KIND>``; it returns the masked object and the kinds it
masked. Identifiers (ids, namespace, kind, failure type, actor) are compared verbatim, so they are not
rewritten: one that holds a credential of a documented format is refused.

What is found, in one pass over the text (overlapping finds are masked as one span):

* the format plugins of detect-secrets (Yelp's maintained rule set: AWS, GitHub, GitLab, Slack, Stripe,
  JWT, PyPI, Azure, SendGrid, Twilio, ...), each match widened to the end of its token (a plugin that
  matches a fixed length must not leave a longer key's tail), and its keyword detector (``password:``,
  ``DB_PASS=``, ``api_key = "..."``, config-file rules; an unquoted value ends at whitespace);
* ``DOCUMENTED``: the formats detect-secrets misses or masks only in part, measured on the 35 formats
  of ``tests/secret_formats.py`` by ``benchmarks/secret_formats.py`` (whole private-key blocks, also
  JSON-escaped; Anthropic, OpenAI, Hugging Face, npm, fine-grained GitHub, Google API keys; Stripe test
  keys and webhook secrets; Authorization headers; URL passwords holding ``@`` or ``/``; ``curl -u``,
  ``--password VALUE``, ``mysql -pPASS``; ``*_TOKEN=`` and other secret-named variables);
* unknown shapes by entropy (``_entropy_spans``): a token of ``ENTROPY_MIN_LENGTH`` or more characters
  mixing upper case, lower case and digits whose Shannon entropy is at least ``ENTROPY_BITS`` bits per
  character. Hex (git SHAs, digests), UUIDs, a value labelled as a hash (``sha512-...``) and base64 that
  decodes to text (a test fixture) are not credentials; base64 text that holds a credential is.
"""

from __future__ import annotations

import base64
import binascii
import functools
import math
import re
from typing import Any

from .errors import InvalidInputError
from .walk import IDENTIFIERS, map_strings

__all__ = ["DOCUMENTED", "ENTROPY_BITS", "ENTROPY_MIN_LENGTH", "IDENTIFIERS", "find_secrets", "mask_secrets",
           "masked", "masked_text", "refuse_credential"]

_Q = r"""(?:\\?["'])?"""            # an optional quote, JSON-escaped or not
_VALUE = r"""[^\s'"\\]{1,256}"""     # an unquoted value: up to whitespace, a quote or a backslash (widened)
# (kind, pattern): the whole match is masked unless the pattern has a group named ``secret``.
# Each is a format detect-secrets 1.5 does not find or masks only in part (benchmarks/secret_formats.py).
DOCUMENTED: tuple[tuple[str, re.Pattern], ...] = tuple((kind, re.compile(p)) for kind, p in (
    # RFC 7468 armour: RSA, EC, DSA, OPENSSH, ENCRYPTED, PKCS#8, and RFC 4880's PGP ... BLOCK; the whole
    # block (detect-secrets flags the BEGIN line only), with literal or JSON-escaped newlines
    ("private-key", r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----[\s\S]*?"
                    r"(?:-----END [A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----|\Z)"),
    # GitHub Docs, "About authentication to GitHub": fine-grained github_pat_ (classic gh*_ is detect-secrets')
    ("github-token", r"\bgithub_pat_[A-Za-z0-9_]{22,255}"),
    # Stripe docs: test-mode sk_test_/rk_test_ keys and whsec_ webhook secrets (detect-secrets: live keys only)
    ("stripe-key", r"\b(?:[sr]k_test_[A-Za-z0-9]{16,256}|whsec_[A-Za-z0-9]{24,256})"),
    ("anthropic-key", r"\bsk-ant-[a-z]{1,16}\d{2}-[A-Za-z0-9_\-]{20,256}"),           # Anthropic API docs: sk-ant-api03-
    ("openai-key", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,256}"),    # OpenAI API reference: sk-, sk-proj-
    ("huggingface-token", r"\bhf_[A-Za-z0-9]{30,256}"),                          # Hugging Face docs: hf_ + 34
    ("npm-token", r"\bnpm_[A-Za-z0-9]{36}"),                 # npm Docs, access tokens (detect-secrets: .npmrc only)
    ("google-api-key", r"\bAIza[0-9A-Za-z_\-]{35}"),                          # Google Cloud docs, API keys
    # RFC 7235/6750: an Authorization header's credentials, and a bare "Bearer <token>"
    ("authorization", r"(?i)\bauthorization" + _Q + r"\s*[:=]\s*" + _Q
                      + r"\s*(?:bearer|token|basic|digest)?\s*(?P<secret>[A-Za-z0-9._~+/=\-]{8,256})"),
    ("bearer-token", r"(?i)\bbearer\s+(?P<secret>[A-Za-z0-9._~+/\-]{16,256}=*)"),
    # RFC 3986 3.2.1 user:password@, the password up to the last '@' (it may hold '@', '/', sub-delims); not a port
    ("url-password", r"(?i)\b[a-z][a-z0-9+.\-]{0,31}://[^\s:@/?#'\"\\]{1,256}:(?!\d+(?:/|$))(?P<secret>[^\s'\"\\]{0,255}[^\s'\"\\@])@"),
    ("curl-user", r"(?:(?<=\s)|^)(?:-u|--user)\s*" + _Q + r"[^\s:/'\"\\]{1,256}:(?!//)(?P<secret>" + _VALUE + ")"),   # curl(1)
    # --password VALUE / --password=VALUE (docker login, psql wrappers, CLIs); not --password-stdin
    ("password-flag", r"(?i)(?:(?<=\s)|^)--(?:password|passwd|pass|token|api-?key|secret|client-secret|"
                      r"access-token|auth-token)(?:=|\s+)" + _Q + r"(?P<secret>[^\s'\"\\-][^\s'\"\\]{0,255})"),
    # MySQL manual, connecting: -pPASSWORD attached to the option (mysql, mysqldump, mariadb, ...)
    ("mysql-password", r"\b(?:mysql|mariadb)[a-z\-]{0,16}\b[^\n|;&]{0,256}?\s-p(?P<secret>" + _VALUE + ")"),
    # NAME=value for a variable named as a secret (GITHUB_TOKEN=, ?access_token=); not $VAR, not max_tokens
    ("secret-variable", r"(?i)(?<![A-Z0-9_.\-])[A-Z0-9_.\-]{0,64}(?:PASSWORD|PASSWD|SECRET|TOKEN(?!S)|API_?KEY|"
                        r"ACCESS_?KEY|PRIVATE_?KEY|CREDENTIALS?)[A-Z0-9_]{0,64}" + _Q + "=" + _Q
                        + r"(?P<secret>[^\s'\"$\\<][^\s'\"\\]{0,255})"),
))
# what the context rules mask is a value named by its surroundings: a token format found at the same place
# names the span, and a context rule names it before entropy does
_CONTEXT = {"authorization", "bearer-token", "url-password", "curl-user", "password-flag", "mysql-password",
            "secret-variable", "secret-keyword", "basic-auth-credentials"}
_GUESSED = {"high-entropy", "base64-credential"}

ENTROPY_MIN_LENGTH = 20
ENTROPY_BITS = 3.5        # benchmarks/secret_formats.py: the sweep (docs/results.md)
_TOKEN_CHAR = re.compile(r"[A-Za-z0-9+/=_.\-]*")
_BASE64_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=")
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/=]*")
_VALUE_END = re.compile(r"""[^\s'"\\@]*""")
_HEXISH = re.compile(r"[0-9a-fA-F\-]+=*")
_HASH_LABEL = re.compile(r"(?i)(?:sha(?:1|224|256|384|512)|md5|blake2[bs]?|base64)[-:=,]")   # sha512-, base64,
_WORDS = re.compile(r"""[^\s'"`<>()\[\]{}]+""")
_WORD = re.compile(r"[A-Z]{0,5}[a-z]{3,}|[0-9]{1,4}(?=[A-Z_\-]|$)")    # a word, an acronym before one, a number
_MASKED = re.compile(r"<redacted:[a-z0-9\-]+>")


@functools.cache
def _plugins() -> tuple[tuple[str, tuple[re.Pattern, ...]], ...]:
    """(kind, patterns) of every detect-secrets format plugin (loaded on first use: it imports requests).

    Left out: the public-IP detector (an address is not a credential), the keyword detector (applied
    line by line in ``_keyword_spans``) and the entropy plugins, which score only quoted strings."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.base import RegexBasedDetector
    from detect_secrets.plugins.ip_public import IPPublicDetector
    out = []
    for secret_type, cls in sorted(get_mapping_from_secret_type_to_class().items()):
        if issubclass(cls, RegexBasedDetector) and cls is not IPPublicDetector:
            out.append((re.sub(r"[^a-z0-9]+", "-", secret_type.lower()).strip("-"), tuple(cls().denylist)))
    return tuple(out)


@functools.cache
def _keyword_rules() -> tuple[re.Pattern, tuple[tuple[re.Pattern, int], ...]]:
    """detect-secrets' keyword list (a line without one is skipped) and its rules for config files
    (``password: x``, ``db_pass = x``, ``"x" == pwd``) and code, with the group that holds the value."""
    from detect_secrets.plugins.keyword import (
        CONFIG_DENYLIST_REGEX_TO_GROUP, DENYLIST_REGEX, QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP,
    )
    rules = {**CONFIG_DENYLIST_REGEX_TO_GROUP, **QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP}
    return re.compile(DENYLIST_REGEX, re.IGNORECASE), tuple(rules.items())


def _not_a_value(value: str) -> bool:
    """detect-secrets' filters for a keyword's value: templated (``{x}``, ``${x}``), a ``$VAR``, no letter
    or digit (``****``), a call or an index (``get_password()``); and a path (``PWD=/home/x``)."""
    from detect_secrets.filters.heuristic import (
        is_indirect_reference, is_not_alphanumeric_string, is_prefixed_with_dollar_sign, is_templated_secret,
    )
    return (is_templated_secret(value) or is_prefixed_with_dollar_sign(value) or is_not_alphanumeric_string(value)
            or is_indirect_reference(f"x = {value}") or value.startswith(("/", "./", "~/")))


_CHUNK = 1024


def _lines(text: str):
    """(offset, line) of ``text``'s lines, a line longer than ``_CHUNK`` cut at its last whitespace
    before that (else hard): detect-secrets' rules scan to the end of a line from each keyword, so a
    long line must not make them quadratic."""
    for m in re.finditer(r"[^\n]+", text):
        start, line = m.start(), m.group()
        while len(line) > _CHUNK:
            cut = max(line.rfind(" ", 0, _CHUNK), line.rfind("\t", 0, _CHUNK)) + 1 or _CHUNK
            yield start, line[:cut]
            start, line = start + cut, line[cut:]
        yield start, line


def _plugin_spans(text: str) -> list[tuple[int, int, str]]:
    """detect-secrets' format plugins, line by line as they are meant: (start, end, kind). The value is
    the match's last group when it ends the match (``://user:PASSWORD@``), else the whole match; it is
    widened to the end of its token."""
    out = []
    for offset, line in _lines(text):
        for kind, patterns in _plugins():
            for pattern in patterns:
                reach = 0
                for m in pattern.finditer(line):
                    start, end = m.span()
                    if m.lastindex and m.end(m.lastindex) >= end - 1 and m.end(m.lastindex) > m.start(m.lastindex):
                        start, end = m.span(m.lastindex)
                    if end > reach:
                        reach = _TOKEN_CHAR.match(line, end).end()
                        out.append((offset + start, offset + reach, kind))
    return out


def _keyword_spans(text: str) -> list[tuple[int, int, str]]:
    """detect-secrets' keyword rules, line by line; an unquoted value ends at whitespace."""
    out = []
    keyword, rules = _keyword_rules()
    for offset, line in _lines(text):
        if not keyword.search(line):
            continue
        for pattern, group in rules:
            for m in pattern.finditer(line):
                start = m.start(group)
                quoted = m.group(group - 1) if group > 1 else ""
                value = m.group(group) if quoted in ("'", '"', "`") else re.match(r"\S*", line[start:]).group()
                if value and not _not_a_value(value):
                    out.append((offset + start, offset + start + len(value.rstrip("'\",;")), "secret-keyword"))
    return out


def _documented_spans(text: str) -> list[tuple[int, int, str]]:
    """``DOCUMENTED``'s finds, a value widened to the end of its word and a token to the end of its token
    (the patterns' bounded lengths keep them linear; a longer credential is still masked whole)."""
    out = []
    for kind, pattern in DOCUMENTED:
        value, reach = "secret" in pattern.groupindex, 0
        for m in pattern.finditer(text):
            start, end = m.span("secret") if value else m.span()
            if end > max(start, reach):
                reach = (_VALUE_END if value else _TOKEN_CHAR).match(text, end).end()
                out.append((start, reach, kind))
    return out


def _entropy(token: str) -> float:
    """Shannon entropy of ``token``'s characters, bits per character."""
    n = len(token)
    return -sum(c / n * math.log2(c / n) for c in map(token.count, set(token)))


def _decoded_text(token: str) -> str | None:
    """``token`` decoded as base64 (standard or URL-safe) when that gives printable UTF-8 text, else None."""
    body = token.rstrip("=").replace("-", "+").replace("_", "/")
    if len(body) % 4 == 1:
        return None
    try:
        text = base64.b64decode(body + "=" * (-len(body) % 4), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    return text if sum(c.isprintable() or c in "\n\r\t" for c in text) >= 0.95 * len(text) else None


def _reads_as_words(token: str) -> bool:
    """An identifier (``TestHTTPAdapter2Retries``): 70 % of it or more is words, acronyms and numbers.
    Random base62 keys of 20 characters read so 2 % of the time, of 32 characters 0.6 %."""
    return sum(len(m.group()) for m in _WORD.finditer(token)) >= 0.7 * len(token)


@functools.cache
def _token_pattern(min_length: int) -> re.Pattern:
    return re.compile(r"[A-Za-z0-9+_\-]{%d,}={0,2}" % min_length)


def _entropy_spans(text: str, bits: float = ENTROPY_BITS, min_length: int = ENTROPY_MIN_LENGTH) -> list[tuple[int, int, str]]:
    """Tokens of no known format that look random: long, mixed upper/lower/digits, high entropy; not hex
    or a UUID, not labelled as a hash, not base64 of text (unless that text holds a credential).
    ``bits``/``min_length``: the rule's thresholds (benchmarks/secret_formats.py sweeps them)."""
    out = []
    for word in _WORDS.finditer(text):
        label = _HASH_LABEL.search(word.group())
        end = word.start() + label.start() if label else word.end()   # what follows a hash label is its digest
        for m in _token_pattern(min_length).finditer(text, word.start(), end):
            token = m.group()
            if (_HEXISH.fullmatch(token) or not (re.search(r"[a-z]", token) and re.search(r"[A-Z]", token)
                                                 and re.search(r"[0-9]", token))
                    or _entropy(token) < bits or _reads_as_words(token)):
                continue
            decoded = _decoded_text(token)
            if decoded is None:      # widened over the base64 run it is part of (an AWS secret holds / and +)
                start, stop = m.start(), _BASE64_RUN.match(text, m.end(), end).end()
                while start > word.start() and text[start - 1] in _BASE64_CHARS:
                    start -= 1
                out.append((start, stop, "high-entropy"))
            elif _spans(decoded, entropy=False):
                out.append((m.start(), m.end(), "base64-credential"))
    return out


def _rank(kind: str) -> int:
    return 2 if kind in _GUESSED else 1 if kind in _CONTEXT else 0


_CACHED_CHARS = 256    # short strings repeat (projects, labels, ids, commands): their spans are kept


def _spans(text: str, *, entropy: bool = True) -> list[tuple[int, int, str]]:
    """Merged (start, end, kind) of every credential in ``text``, in order; one already masked is skipped.
    Overlapping finds become one span, named by its token format when one was found there. A pure
    function of the text, so a short one's answer is kept (an import repeats them thousands of times)."""
    if len(text) <= _CACHED_CHARS:
        return list(_short_spans(text, entropy))
    return _find_spans(text, entropy)


@functools.lru_cache(maxsize=16384)
def _short_spans(text: str, entropy: bool) -> tuple[tuple[int, int, str], ...]:
    return tuple(_find_spans(text, entropy))


def _find_spans(text: str, entropy: bool) -> list[tuple[int, int, str]]:
    found = _plugin_spans(text) + _documented_spans(text) + _keyword_spans(text)
    if entropy:
        found += _entropy_spans(text)
    marks = [m.span() for m in _MASKED.finditer(text)]
    found = sorted((s, e, k) for s, e, k in found if not any(s < me and ms < e for ms, me in marks))
    merged: list[list] = []
    for start, end, kind in found:
        if merged and start < merged[-1][1]:
            last = merged[-1]
            last[1] = max(last[1], end)
            if _rank(kind) < _rank(last[2]):
                last[2] = kind
        else:
            merged.append([start, end, kind])
    return [tuple(m) for m in merged]


def masked_text(text: str) -> tuple[str, list[str]]:
    """(``text`` with every credential replaced by ``<redacted:KIND>``, the kinds masked, one per span).
    Idempotent; the very same string when nothing is found."""
    spans = _spans(text) if text else []
    if not spans:
        return text, []
    parts, at = [], 0
    for start, end, kind in spans:
        parts += [text[at:start], f"<redacted:{kind}>"]
        at = end
    return "".join(parts) + text[at:], [kind for _, _, kind in spans]


def find_secrets(text: str) -> list[str]:
    """The kinds of credential ``text`` holds (one entry per masked span)."""
    return masked_text(text or "")[1]


def mask_secrets(text: str) -> str:
    """``text`` with every credential replaced by ``<redacted:KIND>`` (idempotent)."""
    return masked_text(text)[0]


def refuse_credential(value: Any, name: str, where: str) -> None:
    """An identifier is kept verbatim: refuse one holding a credential of a documented format (the error
    names the field and the kind, never the value). Entropy alone does not refuse: ids may be random."""
    if isinstance(value, str) and value:
        kinds = [kind for _, _, kind in _spans(value, entropy=False)]
        if kinds:
            raise InvalidInputError(f"{where}: {name} holds a credential ({', '.join(sorted(set(kinds)))}); an "
                                    f"identifier is kept verbatim, so it cannot be masked: use another {name}")


def masked(obj: Any, *, where: str = "") -> tuple[Any, list[str]]:
    """(``obj`` with every string in it masked, the sorted kinds masked): the one pass over a memory.

    ``obj`` is a string, a dataclass (``Episode``, ``Attempt``, ``MemoryVariant``, ``Provenance``: every
    field, recursively, except ``IDENTIFIERS``, which are refused when they hold a credential), a mapping
    (values; keys are field names) or a list/tuple. Anything else (numbers, enums, None) is returned as is;
    an unchanged object is returned itself."""
    kinds: list[str] = []
    where = where or type(obj).__name__

    def mask(text: str) -> str:
        out, found = masked_text(text)
        kinds.extend(found)
        return out

    out = map_strings(obj, mask, on_identifier=lambda v, name: refuse_credential(v, name, where))
    return out, sorted(set(kinds))
