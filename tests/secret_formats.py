"""The 35 credential formats of issue 44, each made up in its issuer's documented shape, with where
that shape is documented; and the places a credential can sit in a text (start, middle, end,
JSON-escaped, inside a URL, inside quotes).

``FORMATS[name].make(rng)`` gives ``(text, secrets)``: a snippet as it would appear in a command, a
log or a config file, and the pieces of it that must not survive masking (the token, the password,
each body line of a key block). None of the values is a live credential: they are drawn at random
from the format's alphabet. ``benchmarks/secret_formats.py`` and ``tests/unit/test_secret_pass.py``
use them.
"""

from __future__ import annotations

import base64
import json
import random
import re
import string
from dataclasses import dataclass
from typing import Callable

B62 = string.ascii_letters + string.digits
B64 = B62 + "+/"
B64URL = B62 + "-_"
HEX = "0123456789abcdef"
_PW = B62 + "!#%*+-.^_~"          # what a typed password holds, besides the shapes of ``_url_at``


def _draw(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _password(rng: random.Random, n: int | None = None) -> str:
    """A typed password: letters, digits and a few signs, starting with a letter (a ``-p`` value)."""
    return rng.choice(string.ascii_letters) + _draw(rng, _PW, (n or rng.randint(9, 18)) - 1)


def _key_block(rng: random.Random, label: str, first: str, lines: int = 6) -> tuple[str, list[str]]:
    """A PEM-style armoured block (RFC 7468): BEGIN line, 64-column base64 body, END line."""
    body = [first + _draw(rng, B64, 64 - len(first))] + [_draw(rng, B64, 64) for _ in range(lines - 1)]
    body[-1] = body[-1][:40] + "=="
    return f"-----BEGIN {label}-----\n" + "\n".join(body) + f"\n-----END {label}-----", body


def _pgp(rng):
    body = ["lQOYBF" + _draw(rng, B64, 58)] + [_draw(rng, B64, 64) for _ in range(4)]
    checksum = "=" + _draw(rng, B64, 4)
    return ("-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n" + "\n".join(body) + f"\n{checksum}\n"
            "-----END PGP PRIVATE KEY BLOCK-----", body)


def _service_account(rng):
    """A Google service-account key file line: the PKCS#8 block JSON-escaped (``\\n`` for newlines)."""
    block, body = _key_block(rng, "PRIVATE KEY", "MIIEv")
    return '"private_key": ' + json.dumps(block + "\n"), body


def _jwt(rng):
    def part(obj):
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()
    token = ".".join((part({"alg": "HS256", "typ": "JWT"}),
                      part({"sub": _draw(rng, string.digits, 10), "name": _draw(rng, string.ascii_lowercase, 8),
                            "iat": rng.randint(10**9, 2 * 10**9)}),
                      _draw(rng, B64URL, 43)))
    return f"Authorization failed: token {token} expired", [token]


def _token(prefix: str, alphabet: str, n: int, suffix: str = "") -> Callable[[random.Random], tuple[str, list[str]]]:
    def make(rng):
        token = prefix + _draw(rng, alphabet, n) + suffix
        return token, [token]
    return make


def _with(template: str, value: Callable[[random.Random], str]) -> Callable[[random.Random], tuple[str, list[str]]]:
    """A snippet holding one drawn value (``{v}`` in ``template``); the value is the secret."""
    def make(rng):
        v = value(rng)
        return template.format(v=v), [v]
    return make


def _slack_bot(rng):
    token = f"xoxb-{_draw(rng, string.digits, 11)}-{_draw(rng, string.digits, 13)}-{_draw(rng, B62, 24)}"
    return token, [token]


def _slack_user(rng):
    token = (f"xoxp-{_draw(rng, string.digits, 11)}-{_draw(rng, string.digits, 11)}-"
             f"{_draw(rng, string.digits, 13)}-{_draw(rng, HEX, 32)}")
    return token, [token]


def _slack_webhook(rng):
    path = f"T{_draw(rng, string.ascii_uppercase + string.digits, 10)}/B{_draw(rng, string.ascii_uppercase + string.digits, 10)}/{_draw(rng, B62, 24)}"
    return f"curl -X POST https://hooks.slack.com/services/{path}", [path.rsplit("/", 1)[1]]


def _github_fine(rng):
    token = f"github_pat_11{_draw(rng, string.ascii_uppercase + string.digits, 20)}_{_draw(rng, B62, 59)}"
    return token, [token]


def _azure(rng):
    key = _draw(rng, B64, 86) + "=="
    return (f"DefaultEndpointsProtocol=https;AccountName=store{_draw(rng, string.ascii_lowercase, 6)};"
            f"AccountKey={key};EndpointSuffix=core.windows.net", [key])


def _url_at(rng):
    """A password typed raw into a URL, holding ``@`` and ``/`` (libpq and many clients read it)."""
    pw = f"{_password(rng, 6)}@{_password(rng, 5)}/{_password(rng, 5)}"
    return f"postgresql://app:{pw}@db.example.com:5432/orders", [pw]


def _curl_u(rng):
    pw = _password(rng)
    return f"curl -u deploy:{pw} https://artifacts.example.com/api/upload", [pw]


def _openai(rng):
    token = f"sk-proj-{_draw(rng, B64URL, 40)}T3BlbkFJ{_draw(rng, B64URL, 40)}"
    return token, [token]


def _aws_secret(rng):
    key = _draw(rng, B64, 40)
    return f"aws_secret_access_key = {key}", [key]


@dataclass(frozen=True)
class Format:
    name: str
    make: Callable[[random.Random], tuple[str, list[str]]]
    source: str


FORMATS: dict[str, Format] = {f.name: f for f in (
    Format("aws-access-key-id", _token("AKIA", string.ascii_uppercase + "234567", 16),
           "AWS IAM User Guide, 'IAM identifiers': access key IDs begin AKIA, 20 characters"),
    Format("aws-secret-access-key", _aws_secret,
           "AWS CLI User Guide, 'Configuration and credential file settings': aws_secret_access_key, 40 characters"),
    Format("pem-rsa-private-key", lambda rng: _key_block(rng, "RSA PRIVATE KEY", "MIIEow"),
           "RFC 7468 textual encoding; RFC 8017 (PKCS #1) RSAPrivateKey"),
    Format("pem-ec-private-key", lambda rng: _key_block(rng, "EC PRIVATE KEY", "MHcCAQEE", 3),
           "RFC 5915 'EC PRIVATE KEY' in RFC 7468 armour"),
    Format("pem-pkcs8-json-escaped", _service_account,
           "Google Cloud IAM docs, 'Create service account keys': the JSON key file's private_key field"),
    Format("openssh-private-key", lambda rng: _key_block(rng, "OPENSSH PRIVATE KEY", "b3BlbnNzaC1rZXktdjEAAAAA"),
           "OpenSSH PROTOCOL.key: 'openssh-key-v1' in 'OPENSSH PRIVATE KEY' armour"),
    Format("pgp-private-key", _pgp, "RFC 4880 section 6.2: 'PGP PRIVATE KEY BLOCK' ASCII armour"),
    Format("jwt", _jwt, "RFC 7519 / RFC 7515 compact serialization: base64url header.payload.signature"),
    Format("slack-bot-token", _slack_bot, "Slack API docs, 'Token types': bot tokens xoxb-"),
    Format("slack-user-token", _slack_user, "Slack API docs, 'Token types': user tokens xoxp-"),
    Format("slack-webhook-url", _slack_webhook,
           "Slack API docs, 'Sending messages using incoming webhooks': https://hooks.slack.com/services/T.../B.../..."),
    Format("stripe-secret-key", _token("sk_live_", B62, 24), "Stripe docs, 'API keys': secret keys sk_live_"),
    Format("stripe-restricted-key", _token("rk_live_", B62, 24), "Stripe docs, 'Restricted API keys': rk_live_"),
    Format("stripe-webhook-secret", _token("whsec_", B62, 32),
           "Stripe docs, 'Check the webhook signatures': endpoint secrets whsec_"),
    Format("anthropic-api-key", _token("sk-ant-api03-", B64URL, 93, "AA"),
           "Anthropic API docs, 'Authentication': x-api-key keys sk-ant-api03-"),
    Format("huggingface-token", _token("hf_", string.ascii_letters, 34),
           "Hugging Face Hub docs, 'User access tokens': hf_ tokens"),
    Format("gitlab-pat", _token("glpat-", B64URL, 20), "GitLab docs, 'Personal access tokens': prefix glpat-"),
    Format("npm-token", _token("npm_", B62, 36), "npm Docs, 'About access tokens': npm_ granular and classic tokens"),
    Format("github-classic-pat", _token("ghp_", B62, 36),
           "GitHub Docs, 'About authentication to GitHub': ghp_ personal access tokens"),
    Format("github-fine-grained-pat", _github_fine, "GitHub Docs, fine-grained personal access tokens github_pat_"),
    Format("github-app-token", _token("ghs_", B62, 36), "GitHub Docs: ghs_ GitHub App installation tokens"),
    Format("dotenv-password", _with("PASSWORD={v}", _password), "dotenv / The Twelve-Factor App III 'Config'"),
    Format("dotenv-db-pass", _with("DB_PASS={v}", _password), "dotenv convention (Laravel, Django settings): DB_PASS"),
    Format("dotenv-api-key-quoted", _with('API_KEY="{v}"', lambda rng: _draw(rng, B62, 32)),
           "dotenv: a double-quoted value"),
    Format("yaml-password", _with("database:\n  user: app\n  password: {v}\n", _password),
           "YAML 1.2 block mapping (Spring Boot spring.datasource.password, docker-compose)"),
    Format("mysql-p-attached", _with("mysql -u root -p{v} orders", _password),
           "MySQL 8.0 Reference Manual, 'Command Options for Connecting to the Server': -p[password]"),
    Format("password-flag-spaced", _with("docker login --username ci --password {v} registry.example.com", _password),
           "Docker CLI reference, 'docker login': --password VALUE"),
    Format("curl-user-password", _curl_u, "curl man page: -u, --user <user:password>"),
    Format("bearer-token", _with("curl -H 'Authorization: Bearer {v}' https://api.example.com/v1/me",
                                 lambda rng: _draw(rng, B64URL, 40)),
           "RFC 6750 section 2.1: Authorization request header, Bearer scheme"),
    Format("azure-storage-connection-string", _azure,
           "Azure Storage docs, 'Configure Azure Storage connection strings': AccountKey, 88 base64 characters"),
    Format("google-api-key", _token("AIza", B64URL, 35), "Google Cloud docs, 'Manage API keys': AIza + 35 characters"),
    Format("url-password-at-slash", _url_at,
           "RFC 3986 3.2.1 user information, with the password's '@' and '/' left unencoded"),
    Format("url-password", _with("git clone https://deploy:{v}@git.example.com/team/app.git", _password),
           "RFC 3986 3.2.1 user information (user:password, still sent by git and pip)"),
    Format("openai-project-key", _openai,
           "OpenAI API reference, 'Authentication': sk-proj- project keys (T3BlbkFJ marker)"),
    Format("pypi-token", _token("pypi-AgEIcHlwaS5vcmc", B64URL, 70),
           "PyPI help, 'API tokens': pypi- macaroons beginning AgEIcHlwaS5vcmc"),
)}
assert len(FORMATS) == 35


# where a credential sits in a field's text: (name, function of the snippet)
PLACES: dict[str, Callable[[str], str]] = {
    "alone": lambda s: s,
    "start": lambda s: f"{s}\nerror: exit status 1",
    "middle": lambda s: f"running step 3: {s} ; then retrying",
    "end": lambda s: f"Traceback (most recent call last):\n  File \"deploy.py\", line 4\nRuntimeError: {s}",
    "json-escaped": lambda s: json.dumps({"level": "error", "msg": s}),
    "in-url": lambda s: f"GET https://api.example.com/v1/hook?cfg={s}&retry=1",
    "single-quoted": lambda s: f"echo '{s}'",
    "double-quoted": lambda s: f'export CFG="{s}"',
}


def case(name: str, seed: int, place: str = "alone") -> tuple[str, list[str]]:
    """(a text holding format ``name`` at ``place``, the secrets it must lose)."""
    text, secrets = FORMATS[name].make(random.Random(f"{name}/{seed}"))
    return PLACES[place](text), secrets


def _pieces(secret: str) -> set[str]:
    """What of ``secret`` must not survive: itself, as JSON escapes it, and every 8 characters of it (a
    window at every 4th character; none across a quote, backslash or space, which JSON may escape), so a
    credential masked only in part is a leak too."""
    out = {secret, json.dumps(secret)[1:-1]}
    windows = [secret[i:i + 8] for i in (*range(0, len(secret) - 7, 4), len(secret) - 8) if i >= 0]
    return out | {w for w in windows if len(w) == 8 and not re.search(r'["\\\s]', w)}


def leaked(secrets: list[str], *outputs: str | bytes) -> list[str]:
    """The secrets any output holds, whole or in part (``_pieces``)."""
    hay = "\n".join(o.decode("utf-8", "replace") if isinstance(o, bytes) else o for o in outputs)
    return [secret for secret in secrets if any(piece in hay for piece in _pieces(secret))]
