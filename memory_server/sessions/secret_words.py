"""Words around secrets: which names hold credentials, which values are only code, and which look random.

Plain functions over short strings (a name is at most 100 characters, a value at most 1,024), for
`secret_context.py`:

- `name_kind(name)`: "strong" when the name says it holds a credential (`DB_PASSWORD`, `apiKey`,
  `client_secret`, `X-Auth-Token`, `GH_PAT`), "weak" when it may (`client_id`, `key`, `access`), else None.
  Names are split into parts (`_ - .`, camelCase); a part ending in a long keyword counts (`dbpassword`,
  `authtoken`); short keywords count only as a whole part (`pass`, `pwd`, `pat`, `auth`, `key`). Names
  that only talk about a credential are not one: `password_hash`, `token_url`, `max_tokens`, `tokenizer`,
  `cache_key`, `key_id`, `secret_name`.
- `is_ordinary_value(...)`: code, placeholders, numbers, paths, prompts and templates: kept whatever the name.
- `looks_random(token)`: a generated key rather than a word, identifier, hash or number.
"""

from __future__ import annotations

import math
import re
from collections import Counter

# -- names -------------------------------------------------------------------------------------------------

_LONG_KEYWORDS = (
    "password",
    "passwd",
    "passphrase",
    "passcode",
    "secret",
    "token",
    "apikey",
    "accesskey",
    "privatekey",
    "secretkey",
    "credential",
    "credentials",
    "authkey",
    "webhook",
    "bearer",
    "cookie",
)
_SHORT_STRONG = frozenset(
    "pass pwd pw pat auth authorization dsn sas creds cred passwords secrets tokens sig signature "
    "connstr connectionstring htpasswd netrc pgpass otp contribsys".split()
)
_WEAK = frozenset("key client private access login sid".split())
# key names that are not credentials when "key" follows them
_KEY_EXEMPT = frozenset(
    """sort cache primary foreign partition row hash lookup idempotency dedup dedupe unique composite public pub
    group map dict index hot short shortcut object bucket item entry table column field attr attribute property
    prop config setting settings translation i18n message label state store query param event task job lock
    cursor page next prev parent child node tree list range redis s3 storage file path keyboard monkey turkey
    sorting grouping ordering api_version version type name react memo hotkey shortcut dictionary data""".split()
)
# a name ending in one of these talks about a credential without holding one
_TAILS = frozenset(
    """name names type types file files path paths dir url uri endpoint length len size count max min limit hash
    hashed hashes field fields prompt env var variable label format header headers param params policy expiry
    expires expiration ttl timeout lifetime regex re pattern prefix suffix enabled required optional mode kind
    version algorithm alg scheme manager service provider class cls error errors exception message msg description
    desc help hint placeholder example template schema validator validation callback handler method func function
    fn getter setter checker check reset rotation strength rules fingerprint store storetype ring board id ids
    key_id keyid form input field_name column table model serializer filter backend storage cache location
    source factory loader generator encoder decoder parser reader writer helper util utils tests test spec mock
    fixture dto request response result status flag flags option options note notes doc docs counts used
    remaining budget usage stats metrics""".split()
)
_ID_CREDENTIALS = frozenset("client secret app consumer access api".split())  # `client_id`, `access_id`
_SPLIT = re.compile(r"[_\-.\s:/$@\[\]'\"]+|(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def name_parts(name: str) -> list[str]:
    """`DB_PASSWORD` -> [db, password]; `clientSecret` -> [client, secret]; `X-Api-Key` -> [x, api, key]."""
    return [p.lower() for p in _SPLIT.split(name[:100]) if p]


def _part_kind(part: str) -> str | None:
    if part in _SHORT_STRONG:
        return "strong"
    for word in _LONG_KEYWORDS:
        if part == word or (part.endswith(word) and len(part) - len(word) <= 12):
            return "strong"
    if part in _WEAK:
        return "weak"
    return None


def name_kind(name: str) -> str | None:
    """ "strong", "weak" or None: does the name say its value is a credential? (See the module docstring.)
    Of a dotted name only the last part counts: `token.content` is a token's content, `db.password` a password."""
    segments = name.strip(".").split(".")
    parts = name_parts(segments[-1])
    if parts in (["id"], ["key"]) and len(segments) > 1:  # `sumologic.access.id`, `stripe.api.key`
        parts = name_parts(segments[-2])[-1:] + parts
    if not parts or len(parts) > 8:
        return None
    last = parts[-1]
    if last in ("id", "ids") and len(parts) > 1 and parts[-2] in _ID_CREDENTIALS:
        return "weak"  # client_id, access_id, api_id
    if last in _TAILS and not (last == "url" and any("webhook" in p or p == "dsn" for p in parts)):
        return None
    kinds = [_part_kind(p) for p in parts]
    if last == "key" and len(parts) > 1:
        if parts[-2] in _KEY_EXEMPT or "_".join(parts[-2:]) in _KEY_EXEMPT:
            return None
        return "strong"  # STRIPE_KEY, apiKey, signing_key, client-key-data's "key"
    if "strong" in kinds:
        return "strong"
    if "weak" in kinds:
        return "weak"
    return None


# -- values ------------------------------------------------------------------------------------------------

_PLACEHOLDER = re.compile(
    r"(?i)^(?:\$.*|<.*>|<.*|\{.*|%\(?\w*\)?s|%[A-Za-z_]+%|@[A-Za-z_]+@|\[redacted.*|\[private.*|\*+|x{3,}|\.\.\.|…"
    r"|null|none|nil|true|false|yes|no|on|off|undefined|str|string|bytes|number|int|bool|boolean|float|any|object"
    r"|required|optional|secretstr|changeme|changeit|placeholder|example|redacted|hidden|masked|empty|secret|password"
    r"|token|test|dummy|sample|foo|bar|baz|\?+|-+|_+|#+|\.+|your[_\-a-z]*|my[_\-]?(?:password|token|key|secret)"
    r"|(?:api[_\-]?)?key[_\-]?here|insert[_\-a-z]*|enter[_\-a-z]*|todo|tbd|fixme|n/a|na|default|unset|env)$"
)
_TEMPLATE = re.compile(r"\{\{[^}]{0,200}\}\}|\{[\w.\[\]'\"]{0,100}\}|%\(\w{1,60}\)s|\$\{?\w{1,60}\}?|%[sd]")
_NUMBER = re.compile(r"[\d.:\-+e_,]{1,20}")
_CODE_START = re.compile(
    r"^(?:await\s|new\s|not\s|lambda\b|function\b|async\b|yield\b|typeof\b|this\.|self\.|cls\.|\(|\[|\{|&|\*[a-z_])"
)
_CALL_OR_INDEX = re.compile(r"^[A-Za-z_][\w]{0,60}(?:\.[A-Za-z_]\w{0,60}){0,8}\s{0,2}[(\[]")
_ATTRIBUTE = re.compile(
    r"^(?:os|env|process|config|conf|cfg|settings|args|opts|options|request|req|ctx|context|params|kwargs|props"
    r"|secrets|vault|keyring|getpass|sys|st|environ|app|flask|django|data|body|form|payload|credentials|creds"
    r"|auth|user|account|session|store|state|this|self|cls|window|document|module|exports|import|vars|inputs"
    r"|needs|steps|github|matrix)\.[A-Za-z_]"
)
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z_]{0,80}(?:\.[A-Za-z_][A-Za-z_]{0,80}){0,8}$")
_PATH = re.compile(r"^(?:~|\.{1,2}|[A-Za-z]:)?[/\\][\w.\-/\\@+]{0,300}$")
_TYPE_NAME = re.compile(r"^(?:[A-Za-z_]\w{0,60}\.){0,4}_?[A-Z][A-Za-z]{0,60}(?:\[[\w\[\], .|]{0,80}\])?$")
_PROSE_WORDS = frozenset(
    """the a an this that these those is are was were to and or for with in on of it its be been by from as at
    not no yes if then else when which who what how should must can could will would may might here there set
    used use using stored kept saved needed required missing invalid valid expired wrong correct empty given
    provided configured rotated changed updated removed deleted generated created same different also only""".split()
)
_CODE_WORDS = frozenset(
    """await new not lambda function async yield typeof void delete return def class import from const let var
    password passwd secret token key value none null self this args kwargs data result response config settings
    env environ default creds credentials auth pw pwd""".split()
)


_OPERATOR_AFTER = re.compile(r"(?:[!=<>]=|[<>+*/%]|and|or|if|else|for|in|is)(?=\s)")
_LOWER_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]{0,60}")


def _is_variable(v: str) -> bool:
    """A lower-case name of a variable (`count`, `out_tokens`), not a lower-case generated key."""
    return bool(_LOWER_IDENTIFIER.fullmatch(v)) and sum(c.isdigit() for c in v) <= 1 and not looks_random(v)


def is_placeholder(value: str) -> bool:
    """A value that stands for a secret without being one: `$VAR`, `{token}`, `<key>`, `***`, `changeme`."""
    return bool(_PLACEHOLDER.match(value.strip()))


def _is_template(v: str) -> bool:
    return bool(_TEMPLATE.search(v)) and len(_TEMPLATE.sub("", v).strip(" :/@-_.")) < 3


def is_ordinary_value(name: str, value: str, *, quoted: bool, after: str = "", before: str = "") -> bool:
    """True when a value given to a credential name is code, a placeholder, a number, a path, a prompt or a
    template rather than a secret. `after`: the text right after the value (tells a call or a type);
    `before`: what separates it from the name (` = ` with spaces is code's assignment)."""
    v = value.strip()
    if len(v) < 3 or v.startswith(("[REDACTED", "[private")) or is_placeholder(v) or _is_template(v):
        return True
    if _NUMBER.fullmatch(v) and len(v) < 12:
        return True  # a number, a port, a version, a date
    if quoted:
        return v.endswith(":") and " " in v  # a prompt: "Password: "
    return _is_code(name, v, after, before)


def _is_code(name: str, v: str, after: str, before: str) -> bool:
    """An unquoted value that is a word of code or prose, a path, a type, an expression or a variable."""
    if v in _CODE_WORDS or v.lower() in _PROSE_WORDS or _CODE_START.search(v) or _CALL_OR_INDEX.search(v):
        return True
    if _ATTRIBUTE.search(v):
        return True
    bare = name.strip("\"'").lower()
    if _PATH.match(v) and (bare in ("pwd", "oldpwd") or not re.search(r"\d", v.rsplit("/", 1)[-1] or "x")):
        return True
    if _TYPE_NAME.match(v) and (after[:1] in ("", ",", ")", "|", "=", "]", "\n") or "." in v or _has_caps(v)):
        return True  # a type annotation: `auth: AuthTypes | None`, `secret_key: SecretStr`
    if _OPERATOR_AFTER.match(after) or (_is_variable(v) and after[:1] in (",", ")", "}")):
        return True  # `tokens != "off"`, `"untruncated_tokens": count,`: an expression, a variable
    if _is_variable(v) and not name.isupper() and " =" in before:
        return True  # `token.map = lines`: a variable
    if _IDENTIFIER.match(v) and not name.isupper():
        if "_" in v or "." in v or v.lower() == bare or v.lower() in _CODE_WORDS or after[:1] in ("(", "[", "."):
            return True  # `password=password`, `token=settings.token`, `secret=make_secret()`
    return False


def _has_caps(v: str) -> bool:
    return sum(c.isupper() for c in v) >= 2


# -- randomness --------------------------------------------------------------------------------------------

HEX = re.compile(r"(?:0x)?[0-9a-fA-F]{7,}")
UUID = re.compile(r"[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}")
_VOWELS = frozenset("aeiouAEIOU")
_SEGMENT = re.compile(r"[A-Za-z]+|\d+|[^A-Za-z\d]+")


def entropy(text: str) -> float:
    """Shannon entropy in bits per character."""
    if not text:
        return 0.0
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in Counter(text).values())


def is_hash_like(token: str) -> bool:
    """A hex digest, commit id or UUID (possibly with a `sha256:` style prefix): never a secret by itself."""
    bare = token.split(":", 1)[-1] if ":" in token[:8] else token
    return bool(HEX.fullmatch(bare) or UUID.fullmatch(bare))


def looks_random(token: str, *, min_length: int = 16) -> bool:
    """A generated key: long, several kinds of character, high entropy, few vowels among its letters, and not
    a hash, a UUID, a number, a path, a dotted or snake_case name."""
    n = len(token)
    if n < min_length or n > 2000 or is_hash_like(token) or token.isdigit():
        return False
    letters = sum(c.isalpha() for c in token)
    digits = sum(c.isdigit() for c in token)
    upper = sum(c.isupper() for c in token)
    lower = letters - upper
    if letters < n * 0.3:
        return False  # mostly digits and punctuation: a number, a date, a version, an address
    kinds = (upper > 0) + (lower > 0) + (digits > 0)
    if kinds < 2 or (kinds == 2 and digits == 0 and n < 32):
        return False
    if _wordy(token):
        return False
    threshold = 3.0 + min(1.0, (n - min_length) / 24)  # 3.0 bits at 16 characters, 4.0 from 40 up
    return entropy(token) >= min(threshold, math.log2(n) - 0.3)


def _wordy(token: str) -> bool:
    """Made of words: a path, a dotted name, snake_case or camelCase. Words are read as a person writes them:
    a generated key flips case letter by letter (many one-letter pieces) or runs five consonants together."""
    if token.count("/") >= 2 and not token.endswith("=") and "//" not in token:
        segments = [s for s in token.split("/") if s]
        if sum(bool(_WORDLIKE.fullmatch(s) or s.isdigit()) for s in segments) * 2 >= len(segments):
            return True  # a path: `src/memory_server/api.py`
    parts = [p for p in re.split(r"[-_]", token) if p]
    if len(parts) >= 3 and max(map(len, parts)) <= 8 and any(_WORDLIKE.fullmatch(p) for p in parts):
        return True  # `all-MiniLM-L6-v2`, `x-request-id-2`
    if "." in token.strip("."):  # a dotted name: `padding.PKCS1v15`, `a.b.types.PublicKeyTypes`
        segments = token.strip(".").split(".")
        if all(_IDENT.fullmatch(s) for s in segments) and any(_WORDLIKE.fullmatch(s) for s in segments):
            return True
    if sum(r.isdigit() for r in _SEGMENT.findall(token)) > 2:
        return False
    pieces = _CAMEL.findall(token)
    if sum(len(p) == 1 for p in pieces) >= 2 or any(_CONSONANTS.search(p) for p in pieces):
        return False  # `uMAs9xIOEAQMjvttoshT`, `hcfaorsgbz3xi2`
    letters = [c for c in token if c.isalpha()]
    upper = sum(c.isupper() for c in letters)
    if len(letters) >= 12 and 0.35 <= upper / len(letters) <= 0.85:
        return False  # `Ux5mfZTDKEV2IIYKaDJQ`: camelCase has a capital per word, not one letter in two
    return sum(c in _VOWELS for c in letters) >= len(letters) * 0.25


_CAMEL = re.compile(r"[A-Z]{2,}(?![a-z])|[A-Z]?[a-z]+|[A-Z]")
_CONSONANTS = re.compile(r"[b-df-hj-np-tv-xzB-DF-HJ-NP-TV-XZ]{5}")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,80}")
_WORDLIKE = re.compile(r"_?(?:[a-z]{3,30}|[A-Z][a-z]{2,30})(?:_[a-z]{2,30})*")
