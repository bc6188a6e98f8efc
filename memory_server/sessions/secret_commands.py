"""Secrets given to commands on their command line.

A line is split into shell words once (quotes kept with the word), then each command found in it is
checked against what it is known to take a secret as:

    mysql -pSECRET / --password SECRET      sshpass -p SECRET          redis-cli -a SECRET
    ldapsearch -w SECRET                    sqlcmd -P SECRET           docker login -p SECRET
    az login -p SECRET                      htpasswd -b[n] [file] user SECRET
    curl -u user:SECRET                     smbclient -U user%SECRET   keytool -storepass SECRET
    openssl -passin pass:SECRET             aws configure set aws_secret_access_key SECRET
    echo SECRET | sudo -S ...               sudo -S <<< SECRET         echo SECRET | docker login --password-stdin
    machine HOST login USER password SECRET (.netrc)                  host:port:db:user:SECRET (.pgpass)

Linear time: one pass over the words of the lines that name such a command.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from memory_server.sessions.secret_words import is_placeholder

Span = tuple[int, int]
Word = tuple[str, int, int]  # (the word without its quotes, start, end) of the unquoted part

# A word; a quoted string without spaces in it is part of its word (`'pa&ss'`), one with spaces is prose
# quoting a command (`"mysql -pX"`), so its words are read one by one.
_WORD = re.compile(r"(?:'[^'\s]{0,1024}+'|\"[^\"\s]{0,1024}+\"|[^\s|;&<>'\"]{1,4096}+|['\"])++|\|\||\||;|&&|<<<|[<>&]")
_COMMANDS = re.compile(
    r"\b(?:mysql\w{0,20}|mariadb\w{0,20}|mongo\w{0,20}|sshpass|redis-cli|ldap\w{1,20}|sqlcmd|bcp|docker|podman|nerdctl"
    r"|helm|oras|skopeo|buildah|az|htpasswd|curl|wget|http|xh|smbclient|keytool|jarsigner|openssl|aws|sudo"
    r"|machine|default|password|passwd)\b"
)
_SEPARATORS = frozenset(("|", "||", ";", "&&", "&"))
_PGPASS = re.compile(
    r"(?<![\w.:/\-])[\w.\-*]{1,253}+:(?:\d{1,5}|\*):[\w.\-*]{1,100}+:[\w.\-@*]{1,100}+:([^\s\"'`]{1,512}+)"
)


def command_spans(text: str) -> list[Span]:
    spans: list[Span] = [m.span(1) for m in _PGPASS.finditer(text)] if ":" in text else []
    pos = 0
    for m in _COMMANDS.finditer(text):
        if m.start() < pos:
            continue
        line_start = text.rfind("\n", 0, m.start()) + 1
        line_end = text.find("\n", m.end())
        line_end = len(text) if line_end == -1 else line_end
        spans.extend(_line(text, line_start, line_end))
        pos = line_end
    return spans


def _line(text: str, start: int, end: int) -> list[Span]:
    line = text[start:end]
    spans: list[Span] = []
    words = [_unquote(m.group(), start + m.start()) for m in _WORD.finditer(line)]
    segments = _segments(words)
    for i, segment in enumerate(segments):
        spans.extend(_segment(segment, segments[i - 1] if i else None))
    return spans


def _unquote(word: str, at: int) -> Word:
    """A word without the quotes, backticks and brackets around it (a command quoted in prose or JSON)."""
    stripped = word.lstrip("\"'`(")
    at += len(word) - len(stripped)
    inner = stripped.rstrip("\"'`),.:")
    return inner, at, at + len(inner)


def _segments(words: list[Word]) -> list[list[Word]]:
    out: list[list[Word]] = [[]]
    for w in words:
        if w[0] in _SEPARATORS:
            out.append([])
        else:
            out[-1].append(w)
    return [s for s in out if s]


_ARGS_READ = 64  # words after a command that its rule reads


def _segment(words: list[Word], previous: list[Word] | None) -> list[Span]:
    spans: list[Span] = []
    names = [w[0].lower().rsplit("/", 1)[-1] for w in words]
    if names[0] in ("machine", "default"):  # .netrc: machine HOST login USER password SECRET
        spans.extend(_after_word(words, "password"))
    elif len(names) == 2 and names[0] in ("password", "passwd"):  # .netrc, a line of its own
        spans.extend(_secret(words[1]))
    if previous and ("sudo" in names[:1] and ("-s" in names or "--stdin" in names) or "--password-stdin" in names):
        spans.extend(_echoed(previous))
    if "<<<" in names:
        here = names.index("<<<")
        if here + 1 < len(words) and names[0] == "sudo":
            spans.extend(_secret(words[here + 1]))
    i = 0
    while i < len(names):  # each command reads the words after it once: linear in the words
        rule = _rule_for(names[i], names[i + 1 : i + 3])
        if rule is not None:
            spans.extend(rule(words[i + 1 : i + 1 + _ARGS_READ]))
            i += _ARGS_READ
        i += 1
    return spans


Rule = Callable[[list[Word]], list[Span]]
_LOGIN_TOOLS = frozenset(("docker", "podman", "nerdctl", "helm", "oras", "skopeo", "buildah", "az", "crane", "regctl"))


def _rule_for(name: str, following: list[str]) -> Rule | None:
    """The rule that finds the secrets in the arguments of command `name` (followed by the words `following`)."""
    rule = _BY_NAME.get(name)
    if rule is not None:
        return rule
    for prefixes, by_prefix in _BY_PREFIX:
        if name.startswith(prefixes):
            return by_prefix
    if name in _LOGIN_TOOLS and ("login" in following or "add" in following or name == "az"):
        return _login
    if name == "aws" and "configure" in following:
        return _aws_configure
    return None


def _database(args: list[Word]) -> list[Span]:
    return _attached(args, "-p") + _flag(args, "--password", next_word=False)


def _sshpass(args: list[Word]) -> list[Span]:
    return _flag(args, "-p") + _attached(args, "-p")


def _redis(args: list[Word]) -> list[Span]:
    return _flag(args, "-a", "--pass")


def _ldap(args: list[Word]) -> list[Span]:
    return _flag(args, "-w")


def _sqlcmd(args: list[Word]) -> list[Span]:
    return _flag(args, "-P", case=True) + _attached(args, "-P", case=True)


def _login(args: list[Word]) -> list[Span]:
    return _flag(args, "-p", "--password", "--client-secret", "--secret")


def _web(args: list[Word]) -> list[Span]:
    return _user_password(args) + _flag(args, "--password", "--http-password", "--proxy-password")


def _secret(word: Word) -> list[Span]:
    value, start, end = word
    if not value or value.startswith(("-", "$", "[REDACTED", "[private")) or is_placeholder(value):
        return []
    return [(start, end)]


def _flag(args: list[Word], *flags: str, case: bool = False, next_word: bool = True) -> list[Span]:
    """`--flag=SECRET` always; `-f SECRET` / `--flag SECRET` unless `next_word` is False."""
    spans: list[Span] = []
    wanted = flags if case else tuple(f.lower() for f in flags)
    for i, (value, start, end) in enumerate(args):
        key = value if case else value.lower()
        for flag in wanted:
            if flag.startswith("--") and key.startswith(flag + "="):
                spans.extend(_secret((value[len(flag) + 1 :], start + len(flag) + 1, end)))
            elif key == flag and next_word and i + 1 < len(args):
                spans.extend(_secret(args[i + 1]))
    return spans


def _attached(args: list[Word], flag: str, *, case: bool = False) -> list[Span]:
    """`-pSECRET`, `-p'SECRET'` (the value glued to the flag; a bare `-p` prompts)."""
    spans: list[Span] = []
    for value, start, end in args:
        if value[: len(flag)] == flag and len(value) > len(flag) and value[len(flag)] != "-":
            rest = value[len(flag) :]
            if rest[:1] in "'\"" and rest[-1:] == rest[:1]:
                spans.extend(_secret((rest[1:-1], start + len(flag) + 1, end - 1)))
            else:
                spans.extend(_secret((rest, start + len(flag), end)))
    return spans


def _htpasswd(args: list[Word]) -> list[Span]:
    ends = [i for i, w in enumerate(args) if w[0] in ("<", ">", "&")]
    args = args[: ends[0]] if ends else args  # a redirection ends the arguments
    flags = "".join(v[1:] for v, _s, _e in args if v.startswith("-") and not v.startswith("--"))
    positional = [w for w in args if not w[0].startswith("-")]
    if "b" in flags and positional:
        return _secret(positional[-1])
    return []


def _user_password(args: list[Word]) -> list[Span]:
    spans: list[Span] = []
    for i, (value, start, _end) in enumerate(args):
        if value in ("-u", "--user", "-U", "--proxy-user") and i + 1 < len(args):
            v, s, e = args[i + 1]
        elif value.startswith(("--user=", "-u")) and len(value) > 2 and ":" in value:
            offset = value.index("=") + 1 if value.startswith("--user=") else 2
            v, s, e = value[offset:], start + offset, _end
        else:
            continue
        if ":" in v:
            cut = v.index(":") + 1
            spans.extend(_secret((v[cut:], s + cut, e)))
    return spans


def _smb(args: list[Word]) -> list[Span]:
    for i, (value, _s, _e) in enumerate(args):
        if value in ("-U", "--user") and i + 1 < len(args) and "%" in args[i + 1][0]:
            v, s, e = args[i + 1]
            cut = v.index("%") + 1
            return _secret((v[cut:], s + cut, e))
    return []


def _pass_flags(args: list[Word]) -> list[Span]:
    spans: list[Span] = []
    for i, (value, _s, _e) in enumerate(args):
        low = value.lower()
        if low.startswith("pass:"):
            spans.extend(_secret((value[5:], _s + 5, _e)))
        elif low in ("-storepass", "-keypass", "-srcstorepass", "-deststorepass", "-srckeypass", "-destkeypass", "-k"):
            if i + 1 < len(args):
                spans.extend(_secret(args[i + 1]))
        elif low in ("-passin", "-passout", "-pass") and i + 1 < len(args):
            v, s, e = args[i + 1]
            if v.lower().startswith("pass:"):
                spans.extend(_secret((v[5:], s + 5, e)))
    return spans


def _aws_configure(args: list[Word]) -> list[Span]:
    for i, (value, _s, _e) in enumerate(args):
        if re.search(r"aws_(?:secret_access_key|session_token|access_key_id)$", value) and i + 1 < len(args):
            return _secret(args[i + 1])
    return []


def _echoed(previous: list[Word]) -> list[Span]:
    """The value `echo`/`printf` pipes into a command that reads a password from stdin."""
    names = [w[0].lower() for w in previous]
    if names and names[0] in ("echo", "printf") and len(previous) > 1:
        return _secret(previous[-1])
    return []


def _after_word(words: list[Word], keyword: str) -> list[Span]:
    for i, (value, _s, _e) in enumerate(words):
        if value.lower() == keyword and i + 1 < len(words):
            return _secret(words[i + 1])
    return []


_BY_NAME: dict[str, Rule] = {
    "sshpass": _sshpass,
    "redis-cli": _redis,
    "sqlcmd": _sqlcmd,
    "bcp": _sqlcmd,
    "htpasswd": _htpasswd,
    **dict.fromkeys(("curl", "http", "xh", "wget", "httpie"), _web),
    "smbclient": _smb,
    **dict.fromkeys(("keytool", "jarsigner", "openssl"), _pass_flags),
}
_BY_PREFIX: tuple[tuple[tuple[str, ...], Rule], ...] = ((("mysql", "mariadb", "mongo"), _database), (("ldap",), _ldap))
