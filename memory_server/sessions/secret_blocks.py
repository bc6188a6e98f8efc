"""Secrets that span more than a token: private key blocks, and passwords inside URLs.

- `key_block_spans`: PEM private keys (`-----BEGIN ... PRIVATE KEY-----` to its END line, on many lines or
  printed on one), and PuTTY keys (`PuTTY-User-Key-File-N:` to the `Private-MAC:` line). A block whose end
  is missing (a paste cut short) is hidden to the end of the text.
- `url_credential_spans`: `scheme://user:password@host` (the password), and a token used as the user
  (`https://<token>@host`, a Sentry DSN's key).

Linear time: each block or URL is read once, with bounded look-ahead, and scanning resumes after it.
"""

from __future__ import annotations

import re

from memory_server.sessions.secret_words import HEX, is_placeholder, looks_random

Span = tuple[int, int]

_PEM_BEGIN = re.compile(r"-----BEGIN[ A-Z0-9_\-]{0,60}PRIVATE KEY(?: BLOCK)?-----")
_PEM_END = re.compile(r"-----END[ A-Z0-9_\-]{0,60}-----")
_PUTTY = re.compile(r"PuTTY-User-Key-File-\d{1,2}:")
_PUTTY_MAC = re.compile(r"Private-MAC:[ \t]{0,8}+[0-9a-fA-F]{0,128}+")
_USERINFO = re.compile(r"(?P<user>[^/\s:@\"'<>\\]{0,256}+)(?::(?P<password>[^/\s@\"'<>\\]{1,512}+))?@(?=[\w\[])")


def key_block_spans(text: str) -> list[Span]:
    spans: list[Span] = []
    if "PRIVATE KEY" in text:
        spans.extend(_blocks(text, _PEM_BEGIN, _PEM_END))
    if "PuTTY-User-Key-File" in text:
        spans.extend(_blocks(text, _PUTTY, _PUTTY_MAC))
    return spans


def _blocks(text: str, begin: re.Pattern[str], end: re.Pattern[str]) -> list[Span]:
    spans: list[Span] = []
    pos = 0
    while True:
        head = begin.search(text, pos)
        if head is None:
            return spans
        tail = end.search(text, head.end())
        if tail is None:
            spans.append((head.start(), len(text)))  # cut short: hide the rest
            return spans
        spans.append((head.start(), tail.end()))
        pos = tail.end()


def url_credential_spans(text: str) -> list[Span]:
    spans: list[Span] = []
    pos = text.find("://")
    while pos != -1:
        m = _USERINFO.match(text, pos + 3)
        if m:
            span = _credential_in(m)
            if span is not None:
                spans.append(span)
        pos = text.find("://", pos + 3)
    return spans


def _credential_in(m: re.Match[str]) -> Span | None:
    password = m.group("password")
    if password is not None:
        if is_placeholder(password) or password.startswith("[REDACTED") or "{" in password:
            return None
        return m.start("password"), m.end("password")
    user = m.group("user")
    if user and (looks_random(user) or (HEX.fullmatch(user) and len(user) >= 32)):
        return m.start("user"), m.end("user")
    return None
