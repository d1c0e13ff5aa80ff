"""Credentials in memory text: found by their published formats and masked before a memory is stored.

A fix, a log or a question an agent records may carry a token it ran with (``curl -H
"Authorization: Bearer ..."``, ``git clone https://user:ghp_...@github.com/...``, a key printed by a
failing script). A memory is shown to other sessions and exported, so ``Memory.record`` masks every
match of ``PATTERNS`` in every text field of the memory it stores, as ``<redacted:KIND>``, and says
which fields it masked. The patterns are the issuers' documented formats (prefixes and lengths;
sources beside each), a PEM private-key block, a password in URL user info, and ``NAME=value`` for a
variable whose name says it is a secret (``GITHUB_TOKEN=``, ``--password=``); a quoted value after
``=`` is left alone, so SQL such as ``password = 'x'`` is not touched.
"""

from __future__ import annotations

import re
from dataclasses import replace

__all__ = ["PATTERNS", "find_secrets", "mask_secrets", "masked_memory"]

# (kind, pattern): the whole match is masked unless the pattern has a group named ``secret``
PATTERNS: tuple[tuple[str, re.Pattern], ...] = tuple((kind, re.compile(p)) for kind, p in (
    # PEM (RFC 7468): RSA, EC, DSA, OPENSSH, ENCRYPTED and plain PKCS#8 private keys, whole block
    ("private-key", r"-----BEGIN (?:[A-Z]+ )*PRIVATE KEY-----[\s\S]*?(?:-----END (?:[A-Z]+ )*PRIVATE KEY-----|\Z)"),
    # GitHub: ghp_/gho_/ghu_/ghs_/ghr_ + 36 base62; fine-grained github_pat_ (GitHub docs, "About authentication")
    ("github-token", r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b"),
    ("gitlab-token", r"\bglpat-[A-Za-z0-9_\-]{20,}\b"),                   # GitLab personal access tokens
    ("aws-access-key", r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b"),       # AWS IAM unique identifier prefixes
    ("aws-secret-key", r"(?i)aws_secret_access_key\s*[=:]\s*[\"']?(?P<secret>[A-Za-z0-9/+=]{40})"),
    ("slack-token", r"\bxox[abposr]-[A-Za-z0-9\-]{10,}\b"),               # Slack token types
    ("stripe-key", r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}\b"),      # Stripe secret/restricted keys
    ("google-api-key", r"\bAIza[0-9A-Za-z_\-]{35}\b"),                    # Google API keys
    ("openai-key", r"\bsk-(?:proj-|ant-(?:api|admin)\d{2}-)?[A-Za-z0-9_\-]{20,}\b"),   # OpenAI, Anthropic
    ("npm-token", r"\bnpm_[A-Za-z0-9]{36}\b"),                            # npm access tokens
    ("pypi-token", r"\bpypi-AgE[A-Za-z0-9_\-]{50,}"),                     # PyPI API tokens (macaroons)
    ("jwt", r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),   # JWS compact form
    ("bearer-token", r"(?i)\bauthorization:\s*(?:bearer|token|basic)\s+(?P<secret>[A-Za-z0-9._~+/=\-]{8,})"),
    ("url-password", r"(?i)\b[a-z][a-z0-9+.\-]*://[^\s:@/?#]+:(?P<secret>[^\s@/?#]+)@"),
    ("secret-variable", r"(?i)(?:\b|--)[A-Z0-9_\-]*(?:PASSWORD|PASSWD|SECRET|TOKEN|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY)"
                        r"[A-Z0-9_]*=(?P<secret>[^\s'\"$][^\s'\"]*)"),
))


_MASK = "<redacted:"


def _span(m: re.Match) -> tuple[int, int] | None:
    """Where the credential of match ``m`` lies; None when an earlier mask is all it found."""
    start, end = m.span("secret") if "secret" in m.re.groupindex else m.span()
    return None if m.string.startswith(_MASK, start) else (start, end)


def find_secrets(text: str) -> list[str]:
    """The kinds of credential ``text`` holds (one entry per match)."""
    return [kind for kind, pattern in PATTERNS for m in pattern.finditer(text or "") if _span(m)]


def mask_secrets(text: str) -> str:
    """``text`` with every credential replaced by ``<redacted:KIND>`` (idempotent)."""
    for kind, pattern in PATTERNS:
        def mask(m: re.Match, kind=kind) -> str:
            span = _span(m)
            if span is None:
                return m.group(0)
            return m.string[m.start():span[0]] + f"{_MASK}{kind}>" + m.string[span[1]:m.end()]
        text = pattern.sub(mask, text)
    return text


TEXT_FIELDS = ("question", "context", "failure_context", "before", "after", "error")


def masked_memory(memory):
    """(``memory`` with its text fields and signature strings masked, the fields that held a credential)."""
    changed: dict = {name: mask_secrets(getattr(memory, name)) for name in TEXT_FIELDS
                     if find_secrets(getattr(memory, name))}
    signatures = {k: [mask_secrets(v) for v in vs] if isinstance(vs, (list, tuple)) else vs
                  for k, vs in memory.signatures.items()}
    if signatures != dict(memory.signatures):
        changed["signatures"] = signatures
    seen = tuple(mask_secrets(step) for step in memory.seen)     # the failed steps of its repeats
    if seen != memory.seen:
        changed["seen"] = seen
    return (replace(memory, **changed) if changed else memory), sorted(changed)
