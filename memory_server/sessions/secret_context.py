"""Secrets recognised by their context: a value given to a credential name, in whatever syntax.

`credential_spans(text)` finds every name that says it holds a credential (`secret_words.name_kind`), then
reads what follows it as the value, in any of these syntaxes:

    NAME=value   NAME = "value"   name: value   "name": "value"   name := value   :name => 'value'
    <name>value</name>   <add key="Password" value="..."/>   - name: TOKEN\\n  value: ...
    --name value   --name=value   Authorization: Basic ...   ?token=value&   auth=("user", "pass")
    set_password("svc", "user", "value")   setenv("API_TOKEN", "value")   the password is: value

A strong name (password, secret, token, api key, ...) loses any value that is not code, a placeholder, a
number, a path or a prompt (`secret_words.is_ordinary_value`); a weak one (key, client, access) only a
value that looks like a generated token. In prose ("the password is ...") the value must look like a
secret (a digit, a symbol, mixed case). `random_near_credentials(text)` adds every random-looking token
within a short distance of a credential word, whatever the syntax between them.

Linear time: names are found by one regex pass; each name reads a bounded stretch after it.
"""

from __future__ import annotations

import bisect
import re

from memory_server.sessions.secret_words import (
    is_hash_like,
    is_ordinary_value,
    is_placeholder,
    looks_random,
    name_kind,
    name_parts,
)

Span = tuple[int, int]

# Matched on an ASCII-lowered copy (same length, same positions): far faster than a case-insensitive regex.
KEYWORD = re.compile(
    r"pass|pwd|pw(?![a-z])|secret|token|key|auth|cred|bearer|dsn|sas(?![a-z])|pat(?![a-z])|cookie|webhook"
    r"|client|private|access|login|sid(?![a-z])|sig|otp(?![a-z])|connstr|connectionstring|netrc|pgpass|contribsys|api[_\-.]?id"
)
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-$")
_NAME_REACH = 60
_QUOTES = "\"'`"
_VALUE_MAX = 1024

_SEP = re.compile(r"(?:[\"'`])?\]?[ \t]{0,16}+(?:=>|:=|\?=|\+=|=(?![=~>])|:(?![:/\\=])|->)[ \t]{0,16}+")
_PAIR_SEP = re.compile(
    r"[\"']?[ \t]{0,8}+\{?[ \t]{0,8}+(?:\r?\n[ \t]{0,40}+)?(?:-[ \t]{1,4}+)?(?i:value|val|content|default)[ \t]{0,4}+"
    r"[:=][ \t]{0,4}+"
)
_PAIR_NAME_BEFORE = re.compile(
    r"(?i)(?:(?:key|name|id|property|param|setting)[\"']?[ \t]{0,4}[:=]|variable[ \t])[ \t]{0,4}[\"']?$"
)
_CALLED = re.compile(r"[A-Za-z][\w.\-]{0,60}+[ \t]{1,4}+(?=[\"'])")
_FLAG_SEP = re.compile(r"(?:=|[ \t]{1,8}+)")
_ARG_SEP = re.compile(r"[\"'][ \t]{0,4}+,[ \t]{0,4}+(?=[\"'])")
_PROSE_SEP = re.compile(
    r"(?:[ \t]{1,4}+(?:for|of|on|in|at|the|a|an|my|our|your|this|that|its|new|old|current|default|prod|production"
    r"|staging|dev|test|local|root|admin|user|db|database|server|api|app|account|[A-Z][\w.\-]{0,30}+)){0,3}?"
    r"[ \t]{1,4}+(?P<verb>is|was|are|will be|should be|=|:|to)(?P<colon>[ \t]{0,2}+:)?[ \t]{1,4}+"
)
_BARE = re.compile(r"[^\s\"'`<>]{1,1024}+")
_BARE_QUERY = re.compile(r"[^\s\"'`<>&#]{1,1024}+")
_WORD_AFTER = re.compile(r"[ \t]{0,4}+([A-Za-z][\w\-]{0,20}+)[ \t]{1,4}+")
_SCHEMES = frozenset(
    "basic bearer token digest bot sso-key apikey api-key key hmac aws4-hmac-sha256 negotiate ntlm".split()
)
_TRAILING = ",;)]}.:"
_HEADER_NAMES = ("authorization", "proxy-authorization", "auth")
_PROSE_AFTER = re.compile(r"[ \t]{1,2}[a-z]{2,20}[ \t,.]")
_SPACE_NAMES = frozenset("password passwd passphrase".split())


def context_spans(text: str) -> list[Span]:
    """Values given to credential names, and random-looking tokens near credential words."""
    values, names = _names_and_values(text)
    return values + random_near_credentials(text, names)


def credential_spans(text: str) -> list[Span]:
    """Spans of the values that credential names are given in `text` (see the module docstring)."""
    return _names_and_values(text)[0]


def _names_and_values(text: str) -> tuple[list[Span], list[Span]]:
    spans: list[Span] = []
    names: list[Span] = []
    last = 0
    for m in KEYWORD.finditer(text.translate(_ASCII_LOWER)):
        if m.start() < last:
            continue
        start, end = _name_around(text, m.start(), m.end())
        last = end
        raw = text[start:end]
        flag = raw.startswith("-")
        start += len(raw) - len(raw.lstrip("-.$"))
        end -= len(raw) - len(raw.rstrip("-.$"))
        name = text[start:end]
        kind = name_kind(name)
        if kind is None:
            continue
        names.append((start, end))
        found = _value_of(text, start, end, name, kind, flag)
        if found is not None:
            spans.append(found)
    return spans, names


_CALL_WORDS = frozenset("auth password passwd passphrase secret credentials creds credential login".split())
_ARG = r"(?:\"[^\"\n]{0,200}\"|'[^'\n]{0,200}'|[\w.]{1,80})"
_POSITIONAL = re.compile(rf"[ \t]{{0,4}}{_ARG}(?:[ \t]{{0,4}},[ \t]{{0,4}}{_ARG}){{0,5}}[ \t]{{0,4}}")


def _part_strong(name: str) -> bool:
    """The name's last part says it takes a credential (`auth`, `set_password`, `HTTPBasicAuth`)."""
    parts = name_parts(name)
    return bool(parts) and parts[-1] in _CALL_WORDS


def _name_around(text: str, start: int, end: int) -> Span:
    """The identifier holding text[start:end], at most _NAME_REACH characters each way."""
    s = start
    while s > 0 and start - s < _NAME_REACH and text[s - 1] in _NAME_CHARS:
        s -= 1
    e = end
    while e < len(text) and e - end < _NAME_REACH and text[e] in _NAME_CHARS:
        e += 1
    return s, e


def _value_of(text: str, start: int, end: int, name: str, kind: str, flag: bool) -> Span | None:
    """The span of the value given to the name at text[start:end], or None when it has none (or an
    ordinary one)."""
    before = text[max(0, start - 24) : start]
    opened_tag = before.endswith("<") and text[end : end + 1] == ">"
    if opened_tag:
        return _decide(text, name, kind, end + 1, _until(text, end + 1, "<"), explicit=True)
    if _PAIR_NAME_BEFORE.search(before):  # <add key="Password" value="...">, `- name: TOKEN` + `value: ...`
        pair = _PAIR_SEP.match(text, end)
        if pair:
            return _take(text, pair.end(), name, kind, explicit=True)
    sep = _SEP.match(text, end)
    if sep:
        return _take(text, sep.end(), name, kind, explicit=True, query=before.endswith(("?", "&")))
    if before.endswith(('("', "('")):
        arg = _ARG_SEP.match(text, end)  # setenv("API_TOKEN", "value"): the first argument names the second
        if arg:
            return _take(text, arg.end(), name, kind, explicit=True)
    if text[end : end + 1] == "(" and _part_strong(name):
        return _call_argument(text, end + 1, name)  # set_password(...), HTTPBasicAuth(...), not password.encode(...)
    if flag:
        fsep = _FLAG_SEP.match(text, end)
        if fsep:
            return _take(text, fsep.end(), name, kind, explicit=True)
    return _prose(text, end, name, kind)


def _prose(text: str, end: int, name: str, kind: str) -> Span | None:
    prose = _PROSE_SEP.match(text, end)
    if prose:
        explicit = prose.group("colon") is not None or prose.group("verb") in ("=", ":")
        return _take(text, prose.end(), name, kind, explicit=explicit)
    if name.lower() in _SPACE_NAMES:  # `.netrc`: `password hunter2`
        space = re.compile(r"[ \t]{1,4}+").match(text, end)
        if space:
            return _take(text, space.end(), name, kind, explicit=False)
    return None


def _take(text: str, pos: int, name: str, kind: str, *, explicit: bool, query: bool = False) -> Span | None:
    """Read the value starting at `pos` (quoted, bare, a header with its scheme, a YAML block, a tuple)."""
    if pos >= len(text):
        return None
    pos = _past_scheme(text, pos, name)
    ch = text[pos]
    if ch in "fbruFBRU" and text[pos + 1 : pos + 2] in ("'", '"') and _value_is_template(text, pos + 1):
        return None
    if ch in _QUOTES:
        close = text.find(ch, pos + 1, pos + 1 + _VALUE_MAX)
        line_end = text.find("\n", pos + 1, close) if close != -1 else -1
        if close != -1 and line_end == -1:
            return _decide(text, name, kind, pos + 1, close, explicit=explicit, quoted=True)
        pos += 1
    elif ch in "([":
        return _tuple(text, pos, name, kind) if _part_strong(name) else None
    elif ch in "|>" and text[pos + 1 : pos + 3].strip(" -+") == "" and kind == "strong":
        return _block_scalar(text, pos, name, kind)
    return _take_bare(text, pos, name, kind, explicit=explicit, query=query)


def _past_scheme(text: str, pos: int, name: str) -> int:
    """Where a header's value starts after its scheme (`Authorization: Bearer <here>`)."""
    if name.lower().endswith(_HEADER_NAMES):
        scheme = _WORD_AFTER.match(text, pos)
        if scheme and scheme.group(1).lower() in _SCHEMES and text[scheme.end() : scheme.end() + 1] not in ("=", ":"):
            return scheme.end()
    return pos


def _take_bare(text: str, pos: int, name: str, kind: str, *, explicit: bool, query: bool) -> Span | None:
    """An unquoted value (or the string a call is given: `ConvertTo-SecureString "..."`)."""
    called = _CALLED.match(text, pos)
    if called and kind == "strong":  # `$pw = ConvertTo-SecureString "..."`: the string, not the command
        return _take(text, called.end(), name, kind, explicit=True)
    bare = (_BARE_QUERY if query else _BARE).match(text, pos)
    if not bare:
        return None
    end = bare.end()
    while end > pos and text[end - 1] in _TRAILING:
        end -= 1
    return _decide(text, name, kind, pos, end, explicit=explicit)


def _decide(
    text: str, name: str, kind: str, start: int, end: int, *, explicit: bool, quoted: bool = False
) -> Span | None:
    value = text[start:end]
    if not value.strip() or end - start > _VALUE_MAX:
        return None
    after = text[end : end + 12].lstrip(" \t\"'")
    before = text[max(0, start - 4) : start]
    if is_ordinary_value(name, value, quoted=quoted, after=after, before=before):
        return None
    if kind == "weak" and not _token_like(value):
        return None
    if not explicit and not _secretish(value):
        return None
    if not quoted and value.isalpha() and _PROSE_AFTER.match(text, end):
        return None  # `:param cookie_dict: Dict of key/values`: a word in a sentence
    lead = len(value) - len(value.lstrip())
    trail = len(value) - len(value.rstrip())
    return start + lead, end - trail


def _token_like(value: str) -> bool:
    """A value a weak name (key, client, access) holds as a credential: one word, generated-looking."""
    v = value.strip()
    if len(v) < 10 or any(c.isspace() for c in v) or "://" in v:
        return False
    if is_hash_like(v) or looks_random(v, min_length=10):
        return True
    digits = sum(c.isdigit() for c in v)
    letters = sum(c.isalpha() for c in v)
    if digits and v.isalnum() and v != v.lower() and v != v.upper() and len(v) >= 12:
        return True  # `sur43XbozZcAWu`: all three kinds of character in one word
    return digits >= 3 and letters >= 3 and not re.fullmatch(r"[\w.\-]*\d+\.\d+[\w.\-]*", v)


def _secretish(value: str) -> bool:
    """A value that reads as a secret, not a word: a digit, a symbol inside, mixed case, or randomness."""
    v = value.strip()
    if len(v) < 4 or is_placeholder(v):
        return False
    if any(c.isdigit() for c in v) or looks_random(v, min_length=12):
        return True
    inner = v[1:-1]
    return any(not c.isalnum() and c not in "-_'." for c in inner) or (v[1:] != v[1:].lower() and v != v.upper())


def _until(text: str, pos: int, stop: str) -> int:
    found = text.find(stop, pos, pos + _VALUE_MAX)
    return found if found != -1 else pos


def _value_is_template(text: str, quote_at: int) -> bool:
    """An f-string or template value: `f"Bearer {token}"` is code, not a secret."""
    close = text.find(text[quote_at], quote_at + 1, quote_at + 1 + _VALUE_MAX)
    inner = text[quote_at + 1 : close] if close != -1 else ""
    return "{" in inner and not any(looks_random(w) for w in re.split(r"[\s{}:/=,;]+", inner))


def _tuple(text: str, pos: int, name: str, kind: str) -> Span | None:
    """`auth=("user", "pass")`: the last quoted element (the password) of a short tuple or list."""
    close = text.find(")" if text[pos] == "(" else "]", pos + 1, pos + 256)
    if close == -1 or kind != "strong":
        return None
    inner = text[pos + 1 : close]
    if not _POSITIONAL.fullmatch(inner):
        return None  # keyword arguments are read by their own names
    strings = list(re.finditer(r"\"([^\"\n]{1,200}+)\"|'([^'\n]{1,200}+)'", inner))
    if not strings:
        return None
    last = strings[-1]
    group = 1 if last.group(1) is not None else 2
    return _decide(text, name, kind, pos + 1 + last.start(group), pos + 1 + last.end(group), explicit=True, quoted=True)


def _call_argument(text: str, pos: int, name: str) -> Span | None:
    """`HTTPBasicAuth("user", "pass")`, `set_password("svc", "user", "pw")`: the last quoted argument."""
    return _tuple(text, pos - 1, name, "strong")


def _block_scalar(text: str, pos: int, name: str, kind: str) -> Span | None:
    """YAML `password: |` then the value on the next, indented lines (a key block, a long token)."""
    line_end = text.find("\n", pos)
    if line_end == -1:
        return None
    first = re.compile(r"\n([ \t]{1,40}+)\S").match(text, line_end)
    if not first:
        return None
    indent = first.group(1)
    end = line_end
    limit = min(len(text), line_end + 20_000)
    while end < limit and text.startswith("\n" + indent, end):
        nxt = text.find("\n", end + 1, limit)
        end = nxt if nxt != -1 else limit
    return line_end + 1, end


# -- random tokens near credential words ---------------------------------------------------------------------

_CANDIDATE = re.compile(r"(?<![A-Za-z0-9_+/\-])[A-Za-z0-9_+/\-.~]{16,512}+={0,3}")
_WINDOW_BEFORE = 80
_WINDOW_AFTER = 160


def random_near_credentials(text: str, names: list[Span] | None = None) -> list[Span]:
    """Random-looking tokens within a short distance (same line) of a credential word."""
    anchors = names if names is not None else _names_and_values(text)[1]
    if not anchors:
        return []
    spans: list[Span] = []
    i = 0
    for m in _CANDIDATE.finditer(text):
        token = m.group().strip(".")
        if "//" in token or not looks_random(token) or _near(anchors, m):
            continue
        while i < len(anchors) and anchors[i][1] + _WINDOW_AFTER < m.start():
            i += 1
        for a_start, a_end in anchors[i : i + 4]:
            if a_start - _WINDOW_BEFORE > m.end():
                break
            lo, hi = min(a_end, m.start()), max(a_start, m.end())
            if "\n" not in text[lo:hi]:
                spans.append((m.start(), m.start() + len(token)))
                break
    return spans


def _near(names: list[Span], m: re.Match[str]) -> bool:
    """Whether the candidate overlaps one of the names (a name is not its own value)."""
    i = bisect.bisect_left(names, (m.start() - _NAME_REACH * 2, 0))
    return any(n[0] < m.end() and m.start() < n[1] for n in names[i : i + 8])
