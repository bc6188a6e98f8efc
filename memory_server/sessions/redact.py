"""Keep secrets and private text out of memory: pure functions over strings.

- `redact_secrets(text)` replaces credentials with `[REDACTED]`: API keys (Anthropic `sk-ant-…`, OpenAI
  `sk-…`, AWS `AKIA…`, GitHub `ghp_…`/`gho_…`/`github_pat_…`, Slack `xoxb-…`/`xoxp-…`, Google `AIza…`),
  JSON Web Tokens, `Bearer <token>` and `Authorization:` headers, PEM private key blocks, the password
  in a URL (`https://user:[REDACTED]@host`), and values assigned to secret-looking names
  (`PASSWORD=…`, `api_key: …`, `"client_secret": "…"`, `--password …`).
- `drop_private(text)` removes everything between `<private>` and `</private>` (nesting allowed); an
  unclosed `<private>` hides the rest of the text.
- `clean(text)` does both, private text first. Call it on source text *before* trimming, so a cut can
  never leave half a secret that no longer matches a pattern.

Redaction errs towards hiding: a value that merely looks like a secret in code (`token = make()`) may be
hidden too. Numbers, placeholders (`$VAR`, `<token>`, `***`, `null`) and already redacted values are left.
"""

from __future__ import annotations

import re

REDACTED = "[REDACTED]"

# Whole-token secrets: the match is replaced entirely.
_TOKEN_PATTERNS: tuple[re.Pattern[str], ...] = (
    # PEM private keys; an unclosed block (a cut-off paste) is hidden to the end of the text.
    re.compile(
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
        re.DOTALL,
    ),
    re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{8,}"),
    re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9][A-Za-z0-9_\-]{15,}"),
    re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}\b"),
    re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}"),
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}"),
    re.compile(r"\bglpat-[A-Za-z0-9_\-]{20,}"),
    re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}"),
    re.compile(r"\bAIza[0-9A-Za-z_\-]{35,}"),
    re.compile(r"\beyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]{5,}"),
)

# `Bearer <token>` and `Authorization: Basic <token>`: keep the scheme word, hide the credential. A bearer
# credential must look like one (a digit, or long), so prose such as "Bearer authentication" survives.
_BEARER = re.compile(r"(?i)\b(bearer\s+)([A-Za-z0-9._~+/=\-]{8,})")
_AUTH_HEADER = re.compile(
    r"(?i)\b(authorization[\"']?\s*[:=]\s*[\"']?(?:basic\s+|token\s+|digest\s+)?)(?!bearer\b)([^\s\"',;]{8,})"
)

# scheme://user:password@host -> scheme://user:[REDACTED]@host
_URL_PASSWORD = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://[^/\s:@]+:)([^/\s@]+)(@)")

# Names that hold secrets. The keyword must end the name (`max_tokens`, `tokenizer`, `password_hash`
# are not secrets); any prefix is allowed (`DB_PASSWORD`, `AWS_SECRET_ACCESS_KEY`, `GITHUB_TOKEN`).
_SECRET_NAME = (
    r"[A-Za-z0-9_.\-]*?(?:password|passwd|passphrase|pwd|secret|token|api[_\-]?key|apikey|access[_\-]?key"
    r"|secret[_\-]?key|private[_\-]?key|client[_\-]?secret|auth[_\-]?token|credentials?)"
)
_ASSIGNMENT = re.compile(
    r"(?i)(?<![A-Za-z0-9])(" + _SECRET_NAME + r")(?![A-Za-z0-9])"
    r"([\"']?[ \t]*(?::|=|:=)[ \t]*)([\"']?)([^\s\"'`,;)\]}]+)"
)
_CLI_FLAG = re.compile(r"(?i)(--(?:password|passwd|token|api-key|secret|client-secret)(?:=|[ \t]+))([^\s\"']+)")

_PLACEHOLDER = re.compile(
    r"(?i)^(?:\$.*|<.*|\[redacted.*|\*+|x{3,}|\.\.\.|…|null|none|nil|true|false|undefined|str|string|number|"
    r"int|bool|required|optional|os\.environ.*|os\.getenv.*|process\.env.*|env\(.*|getenv.*|=.*)$"
)

_PRIVATE_TAG = re.compile(r"(?i)<(/?)private\s*>")


def drop_private(text: str) -> str:
    """Remove `<private>…</private>` spans (nested spans count), and everything after an unclosed one."""
    if "<" not in text or not _PRIVATE_TAG.search(text):
        return text
    out: list[str] = []
    depth = 0
    pos = 0
    for m in _PRIVATE_TAG.finditer(text):
        closing = m.group(1) == "/"
        if depth == 0:
            out.append(text[pos : m.start()])
        if closing:
            depth = max(0, depth - 1)  # a stray closing tag is dropped, nothing else
        else:
            depth += 1
        pos = m.end()
    if depth == 0:
        out.append(text[pos:])
    return "".join(out)


def _assignment(m: re.Match[str]) -> str:
    value = m.group(4)
    if _PLACEHOLDER.match(value) or re.fullmatch(r"[\d.:\-]+", value) or len(value) < 3:
        return m.group(0)
    return f"{m.group(1)}{m.group(2)}{m.group(3)}{REDACTED}"


def _bearer(m: re.Match[str]) -> str:
    token = m.group(2)
    if token.startswith("[REDACTED") or not (re.search(r"\d", token) or len(token) >= 24):
        return m.group(0)
    return f"{m.group(1)}{REDACTED}"


def _auth_header(m: re.Match[str]) -> str:
    if m.group(2).startswith("[REDACTED"):
        return m.group(0)
    return f"{m.group(1)}{REDACTED}"


def _cli_flag(m: re.Match[str]) -> str:
    if _PLACEHOLDER.match(m.group(2)):
        return m.group(0)
    return f"{m.group(1)}{REDACTED}"


def redact_secrets(text: str) -> str:
    """Replace API keys, tokens, private keys, URL passwords and secret assignments with `[REDACTED]`."""
    if not text:
        return text
    for pattern in _TOKEN_PATTERNS:
        text = pattern.sub(REDACTED, text)
    text = _URL_PASSWORD.sub(lambda m: f"{m.group(1)}{REDACTED}{m.group(3)}", text)
    text = _BEARER.sub(_bearer, text)
    text = _AUTH_HEADER.sub(_auth_header, text)
    text = _CLI_FLAG.sub(_cli_flag, text)
    text = _ASSIGNMENT.sub(_assignment, text)
    return text


def clean(text: str) -> str:
    """Drop `<private>` text, then redact secrets: what may be written into memory."""
    return redact_secrets(drop_private(text))
