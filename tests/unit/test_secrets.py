"""Credentials never reach the store (issue 32, item 4): a corpus in the issuers' published formats,
each case with where its format is documented, masked at ``record`` and ``import`` on every road;
ordinary log and SQL text that only looks like them is left alone.

The tokens are made up in the documented shape (prefix, alphabet, length); none is a live credential.
"""

from __future__ import annotations

import json

import pytest

from repairmem import Attempt, Episode, Memory, service
from repairmem.secrets import find_secrets, mask_secrets
from repairmem.store import export_jsonl, import_jsonl, open_store

B62 = "aB3dE5fG7hJ9kL1mN2pQ4rS6tU8vW0xY2zA4cD6"
# (kind, text holding one credential, where the format is documented)
CORPUS = [
    ("github-token", f"git clone https://x-access-token@github.com/o/r ghp_{B62[:36]}",
     "GitHub docs, 'About authentication to GitHub': ghp_ personal access tokens, 36 base62 characters"),
    ("github-token", f"GH_TOKEN value gho_{B62[:36]} expired", "GitHub: gho_ OAuth access tokens"),
    ("github-token", f"github_pat_11ABCDEFG0{B62[:12]}_{B62}{B62[:21]}", "GitHub: fine-grained github_pat_"),
    ("gitlab-token", "export CI_TOKEN_VALUE glpat-Ab12Cd34Ef56Gh78Ij90", "GitLab docs: personal access token prefix glpat-"),
    ("aws-access-key", "aws configure set aws_access_key_id AKIAIOSFODNN7EXAMPLE",
     "AWS IAM docs, 'Unique identifiers': AKIA access key ids (their own example key)"),
    ("secret-keyword", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
     "AWS CLI docs, credentials file (their own example secret)"),
    ("slack-token", "curl -d token=xoxb-2345678901-1234567890123-AbCdEfGhIjKlMnOp https://slack.com/api",
     "Slack API docs, token types: xoxb- bot tokens"),
    ("stripe-access-key", "Stripe.api_key = 'sk_live_4eC39HqLyjWDarjtT1zdp7dc'", "Stripe docs, API keys: sk_live_"),
    ("google-api-key", "https://maps.googleapis.com/maps/api/js?key=AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
     "Google Cloud docs, API keys: AIza + 35 characters"),
    ("openai-key", "openai.error.AuthenticationError: Incorrect API key provided: sk-proj-Ab12Cd34Ef56Gh78Ij90Kl",
     "OpenAI API reference, authentication: sk- and sk-proj- keys"),
    ("npm-token", f"//registry.npmjs.org/:_authToken npm_{B62[:36]}", "npm docs, access tokens: npm_ + 36"),
    ("high-entropy", "twine upload -p pypi-AgEIcHlwaS5vcmcCJGE4ZTk5YjE2LTc2ZTQtNDIwMS1iODM3LWI1Y2E4NzQ1ZGQ5NwAC",
     "PyPI docs, API tokens: pypi- macaroons starting AgEIcHlwaS5vcmc (shorter than detect-secrets' 70: found by entropy)"),
    ("json-web-token", "Authorization failed for eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
     "RFC 7519 / jwt.io: header.payload.signature, base64url, header starting eyJ"),
    ("authorization", 'curl -H "Authorization: Bearer 9f8e7d6c5b4a39281706f5e4d3c2b1a0" https://api.example.com',
     "RFC 6750: the Authorization request header field with the Bearer scheme"),
    ("basic-auth-credentials", "fatal: unable to access 'https://deploy:hunter2secret@git.example.com/repo.git/'",
     "RFC 3986 3.2.1 user information (deprecated user:password form, still sent by git and pip)"),
    ("secret-keyword", "DATABASE_PASSWORD=Tr0ub4dor&3 ./manage.py migrate",
     "the twelve-factor convention of credentials in environment variables"),
    ("password-flag", "mysql --password=correcthorse -u root", "MySQL client docs: --password=VALUE"),
    ("private-key", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n"
                    "-----END OPENSSH PRIVATE KEY-----", "RFC 7468 PEM labels; OpenSSH's key file format"),
    ("private-key", "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA1f3x\n-----END RSA PRIVATE KEY-----",
     "RFC 7468 / PKCS#1"),
]
# text that looks near a credential and is not one: never masked
ORDINARY = [
    "SyntaxError: invalid token",
    "SELECT name FROM users WHERE token = 'x'",
    "openai.api_key = os.environ[\"OPENAI_API_KEY\"]",
    "python3 aem_hacker.py -u https://site.com --host 10.0.0.1",
    " ! [rejected]        Fermi3FGLObject-Take2 -> Fermi3FGLObject-Take2 (non-fast-forward)",
    "npm ERR! integrity sha512-" + "Xq9v" * 21 + "Ab== failed",
    "docker login --password-stdin registry.example.com",
    "request max_tokens=512 num_tokens=3",
    "PWD=/home/runner/work/app",
    "pip install scikit-learn sk-video",
    "ModuleNotFoundError: No module named 'ghp'",
    "error: TOKEN_EXPIRED when calling the API",
    "git clone https://github.com/owner/repo.git",
    "export PASSWORD_FILE=$HOME/.pw",
    "KeyError: 'AKIA'",
]


@pytest.mark.parametrize("kind, text, source", CORPUS, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(CORPUS)])
def test_every_documented_format_is_found_and_masked(kind, text, source):
    assert kind in find_secrets(text), source
    masked = mask_secrets(text)
    assert f"<redacted:{kind}>" in masked and find_secrets(masked) == [] and mask_secrets(masked) == masked
    for token in ("ghp_aB3d", "AKIAIOSFODNN7", "wJalrXUtnFEMI", "hunter2", "Tr0ub4dor", "correcthorse",
                  "b3BlbnNzaC1", "MIIEowIB", "9f8e7d6c5b4a", "sk_live_4eC3", "glpat-Ab12", "npm_aB3d"):
        assert token not in masked


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_is_left_alone(text):
    assert find_secrets(text) == [] and mask_secrets(text) == text


def test_a_literal_compared_with_a_secret_named_column_is_masked():
    """detect-secrets' keyword rules read ``password = 'x'`` in SQL as a password (it may be one); no
    query of the Spider runs has such a literal (benchmarks/secret_formats.py: 0 tokens masked)."""
    assert mask_secrets("SELECT * FROM accounts WHERE api_key='k1x9'") == \
        "SELECT * FROM accounts WHERE api_key='<redacted:secret-keyword>'"


def test_no_credential_is_stored_shown_or_exported_on_any_road(tmp_path):
    token = f"ghp_{B62[:36]}"
    fix = f"git clone https://deploy:{token}@github.com/o/r && pip install -r r/requirements.txt"
    request = {"query_id": "t1", "namespace": "proj-a", "task": "install the private package",
               "attempts": [{"command": "pip install privpkg", "outcome": "failed",
                             "error": "ERROR: No matching distribution found for privpkg"},
                            {"command": fix, "outcome": "passed"}]}
    with Memory.open(tmp_path / "m.db", encoder="hashing") as memory:
        out = service.call(memory, "record", request)
        assert out["redacted"] == ["github-token"]        # the URL's password is the token: one span
        stored = memory.get([out["memory_id"]])[0]
        assert token not in repr(stored) and "<redacted:" in stored.after
        got = service.call(memory, "recall", {"query_id": "t2", "failure": {
            "command": "pip install privpkg", "error": "ERROR: No matching distribution found for privpkg"}})
        assert token not in json.dumps(got)
    with open_store(tmp_path / "m.db") as store:
        export_jsonl(store, tmp_path / "out")
    assert token not in (tmp_path / "out" / "positive.jsonl").read_text()
    # a file made elsewhere, holding the raw token, is masked on import too
    line = json.loads((tmp_path / "out" / "positive.jsonl").read_text().splitlines()[0])
    line["provenance"][0]["episode_id"] = "elsewhere/1"
    line["transition"]["after"] = fix
    (tmp_path / "foreign.jsonl").write_text(json.dumps(line) + "\n")
    with open_store(tmp_path / "other.db") as store:
        [vid] = import_jsonl(store, [tmp_path / "foreign.jsonl"])
        assert token not in store.get([vid])[0].after


@pytest.mark.parametrize("text", ["a" * 50_000, "password=" * 5_000, "https://a:" * 5_000, "sk-" * 15_000,
                                  "mysql " * 8_000, "-----BEGIN RSA PRIVATE KEY-----" * 1_500, "x://a:b@" * 6_000],
                         ids=["word", "keyword", "url", "sk", "mysql", "pem", "userinfo"])
def test_masking_stays_linear_on_hostile_text(text):
    """Every rule's repetition bounded, detect-secrets' per-line rules on lines cut at 1024 characters:
    50 KB of the worst shape for each rule masks in well under a second on a quiet machine."""
    import time
    start = time.perf_counter()
    mask_secrets(text)
    assert time.perf_counter() - start < 5.0
