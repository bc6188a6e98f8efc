"""The shapes of secrets: token formats, command lines that carry a secret, and secret-looking names.

Plain tables for `redact.py`. Token formats are public: each provider documents the prefix and alphabet of
its keys. A rule names the format so a missed or over-eager one is easy to find and fix.
"""

from __future__ import annotations

import re

REDACTED = "[REDACTED]"

_B64 = r"A-Za-z0-9+/"
_ID = r"A-Za-z0-9_\-"

# (what it is, pattern). Each pattern matches the secret itself; the whole match becomes [REDACTED].
TOKEN_FORMATS: tuple[tuple[str, str], ...] = (
    # AI providers
    ("Anthropic key", r"sk-ant-(?:api|admin|sid|oat)\d{2}-[A-Za-z0-9_\-]{20,}"),
    ("Anthropic key (short form)", r"sk-ant-[A-Za-z0-9_\-]{8,}"),
    ("OpenAI key", r"sk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9][A-Za-z0-9_\-]{15,}"),
    ("OpenRouter key", r"sk-or-v1-[a-f0-9]{64}"),
    ("Groq key", r"gsk_[A-Za-z0-9]{48,}"),
    ("xAI key", r"xai-[A-Za-z0-9]{60,}"),
    ("Perplexity key", r"pplx-[A-Za-z0-9]{40,}"),
    ("Replicate token", r"r8_[A-Za-z0-9]{37}"),
    ("Hugging Face token", r"(?:hf_|api_org_)[A-Za-z]{30,}"),
    # cloud
    ("AWS access key id", r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}"),
    ("AWS session token", r"(?:FwoGZXIvYXdzE|IQoJb3JpZ2luX2Vj)[A-Za-z0-9+/=]{20,}"),
    ("Google API key", r"AIza[0-9A-Za-z_\-]{35}"),
    ("Google OAuth client secret", r"GOCSPX-[A-Za-z0-9_\-]{20,}"),
    ("Google OAuth access token", r"ya29\.[A-Za-z0-9_\-]{20,}"),
    ("Google OAuth refresh token", r"1//0[A-Za-z0-9_\-]{30,}"),
    ("Azure storage account key", r"(?i:AccountKey|SharedAccessKey)=[" + _B64 + r"]{20,}={0,2}"),
    ("Azure SAS signature", r"(?i:[?&]sig)=[A-Za-z0-9%+/=]{20,}"),
    ("Azure AD client secret", r"[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}"),
    ("DigitalOcean token", r"do[por]_v1_[a-f0-9]{64}"),
    ("Alibaba access key", r"LTAI[A-Za-z0-9]{17,21}"),
    (
        "IBM / Yandex IAM token",
        r"(?:t1\.[A-Z0-9a-z_\-]{40,}={0,2}|AQVN[A-Za-z0-9_\-]{35,38}|y[0-3]_[A-Za-z0-9_\-]{55})",
    ),
    ("Heroku API key (new)", r"HRKU-[A-Za-z0-9_\-]{40,}"),
    ("Fly.io token", r"(?:fo1_[A-Za-z0-9_\-]{43}|fm[12][ar]?_[A-Za-z0-9+/=_\-]{50,})"),
    ("Scalingo token", r"tk-us-[A-Za-z0-9_\-]{48}"),
    ("Cloudflare origin CA key", r"v1\.0-[a-f0-9]{24}-[a-f0-9]{146}"),
    ("Databricks token", r"dapi[a-f0-9]{32}(?:-\d)?"),
    ("Dynatrace token", r"dt0c01\.[A-Z0-9]{24}\.[A-Z0-9]{64}"),
    ("New Relic key", r"NR(?:AK|JS|II|AA)-[A-Za-z0-9]{19,32}"),
    ("Grafana token", r"(?:glc_[A-Za-z0-9+/]{32,}={0,2}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8})"),
    ("Sentry token", r"(?:sntrys_eyJ[A-Za-z0-9+/=_\-]{30,}|sntryu_[a-f0-9]{64})"),
    ("Pulumi token", r"pul-[a-f0-9]{40}"),
    ("Terraform Cloud token", r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=\-]{60,70}"),
    ("Vault token", r"hv[sbr]\.[A-Za-z0-9_\-]{24,}"),
    ("Doppler token", r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9_\-]{40,}"),
    ("1Password service token", r"ops_eyJ[A-Za-z0-9+/=_\-]{50,}"),
    (
        "1Password secret key",
        r"A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}",
    ),
    ("age secret key", r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
    ("Supabase token", r"(?:sbp_[a-f0-9]{40}|sb_secret_[A-Za-z0-9_\-]{20,})"),
    ("PlanetScale token", r"pscale_(?:tkn|oauth|pw)_[A-Za-z0-9=._\-]{32,64}"),
    ("Netlify / Render / Vercel token", r"(?:nfp_|rnd_|vcp_|vci_|vca_|vcr_|vck_)[A-Za-z0-9]{24,}"),
    ("JFrog key", r"(?:AKCp[A-Za-z0-9]{69}|cmVmdGtu[A-Za-z0-9]{56})"),
    ("OpenShift token", r"sha256~[A-Za-z0-9_\-]{43}"),
    ("Kubernetes / Docker bootstrap token", r"\b[a-z0-9]{6}\.[a-z0-9]{16}\b(?=.*(?:token|kubeadm))"),
    ("Harness token", r"(?:pat|sat)\.[A-Za-z0-9_\-]{22}\.[a-f0-9]{24}\.[A-Za-z0-9]{20}"),
    ("Infracost key", r"ico-[A-Za-z0-9]{32}"),
    ("Octopus key", r"API-[A-Z0-9]{26}"),
    ("Prefect key", r"pnu_[A-Za-z0-9]{36}"),
    ("Readme key", r"rdme_[a-z0-9]{70}"),
    ("Sourcegraph token", r"sgp_(?:local_)?[a-f0-9]{16,}_?[a-f0-9]{0,40}"),
    ("SettleMint token", r"sm_(?:pat|aat|sat)_[A-Za-z0-9]{16}"),
    ("Tailscale key", r"tskey-(?:api|auth|client|webhook|scim)-[A-Za-z0-9]{6,}-[A-Za-z0-9]{20,}"),
    ("Buildkite token", r"bkua_[a-f0-9]{40}"),
    ("CircleCI token", r"CCIPAT_[A-Za-z0-9]{22}_[a-f0-9]{40}"),
    ("Defined Networking key", r"dnkey-[a-z0-9=_\-]{26}-[a-z0-9=_\-]{52}"),
    ("LangSmith key", r"lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}"),
    ("Pinecone key", r"pcsk_[A-Za-z0-9_]{50,}"),
    ("Adobe client secret", r"p8e-[A-Za-z0-9]{32}"),
    ("Contentful token", r"CFPAT-[A-Za-z0-9_\-]{43}"),
    ("Dropbox token", r"sl\.[A-Za-z0-9_\-]{130,}"),
    ("HubSpot token", r"pat-(?:na|eu|ap)\d-[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{12}"),
    # code hosting and packages
    ("GitHub token", r"(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}"),
    ("GitHub fine-grained token", r"github_pat_[A-Za-z0-9_]{20,}"),
    ("GitLab token", r"gl(?:pat|ptt|rt|dt|ft|soat|cbt|imt|agent|oas|wt)-[A-Za-z0-9_\-]{20,}"),
    ("GitLab runner registration token", r"GR1348941[A-Za-z0-9_\-]{20}"),
    ("Bitbucket / Atlassian token", r"(?:ATATT3|ATCTT3|ATBB)[A-Za-z0-9_\-=+/]{24,}"),
    ("npm token", r"npm_[A-Za-z0-9]{36}"),
    ("PyPI token", r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{30,}"),
    ("RubyGems key", r"rubygems_[a-f0-9]{48}"),
    ("Clojars token", r"CLOJARS_[a-z0-9]{60}"),
    ("NuGet key", r"oy2[a-z0-9]{43}"),
    ("Docker Hub token", r"dckr_(?:pat|oat)_[A-Za-z0-9_\-]{20,}"),
    ("Postman key", r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}"),
    ("Linear key", r"lin_(?:api|oauth)_[A-Za-z0-9]{40}"),
    ("Notion token", r"(?:secret_[A-Za-z0-9]{43}|ntn_[A-Za-z0-9]{40,})"),
    ("Airtable token", r"pat[A-Za-z0-9]{14}\.[a-f0-9]{64}"),
    ("Figma token", r"figd_[A-Za-z0-9_\-]{40}"),
    ("Typeform token", r"tfp_[A-Za-z0-9_\-=.]{59}"),
    ("Asana / Frame.io token", r"(?:fio-u-[A-Za-z0-9_\-=]{64}|[0-9]/[0-9]{16}:[a-f0-9]{32})"),
    # chat and webhooks
    ("Slack token", r"xox[abposre]-[A-Za-z0-9\-]{10,}"),
    ("Slack refresh / config token", r"xoxe(?:\.xox[bp])?-\d-[A-Z0-9]{100,}"),
    ("Slack app token", r"xapp-\d-[A-Z0-9]+-\d+-[a-z0-9]{20,}"),
    ("Slack webhook", r"(?:https?://)?hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/\-+%]{20,}"),
    ("Discord webhook", r"(?:https?://)?(?:\w+\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_\-]{20,}"),
    ("Discord bot token", r"[MNO][A-Za-z0-9_\-]{23,25}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,38}"),
    ("Microsoft Teams webhook", r"(?:https?://)?[\w.\-]*webhook\.office\.com/webhookb2/[A-Za-z0-9@/\-]{30,}"),
    ("Power Automate / Logic Apps URL", r"https?://[\w.\-]*logic\.azure\.com[^\s\"'<>]*[?&]sig=[A-Za-z0-9%_\-]{20,}"),
    ("Telegram bot token", r"\d{8,10}:[A-Za-z0-9_\-]{35}"),
    (
        "Zapier / IFTTT webhook",
        r"(?:hooks\.zapier\.com/hooks/catch/[\d/A-Za-z]{8,}|maker\.ifttt\.com/trigger/[^\s/]+/with/key/[A-Za-z0-9_\-]{16,})",
    ),
    ("Google Chat webhook", r"chat\.googleapis\.com/v1/spaces/[^\s\"'<>]*(?:key|token)=[A-Za-z0-9%_\-=]{20,}"),
    ("Twitter bearer token", r"A{22}[A-Za-z0-9%]{30,}"),
    ("Facebook access token", r"EAA[A-Za-z0-9]{100,}"),
    ("Mattermost / generic webhook path", r"/hooks/[a-z0-9]{26}\b"),
    # payments and commerce
    ("Stripe key", r"(?:sk|rk|pk)_(?:test|live|prod)_[A-Za-z0-9]{10,}"),
    ("Stripe webhook secret", r"whsec_[A-Za-z0-9+/=]{20,}"),
    ("Square token", r"(?:sq0atp-[A-Za-z0-9_\-]{22}|sq0csp-[A-Za-z0-9_\-]{43}|EAAA[A-Za-z0-9_\-+=]{60})"),
    ("Shopify token", r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}"),
    ("Flutterwave key", r"FLW(?:SECK|PUBK)(?:_TEST)?-[a-hA-H0-9]{12,32}-X"),
    (
        "Shippo / Duffel / EasyPost token",
        r"(?:shippo_(?:live|test)_[a-f0-9]{40}|duffel_(?:test|live)_[A-Za-z0-9_\-=]{43}|EZ[AT]K[A-Za-z0-9]{54})",
    ),
    (
        "Plaid token",
        r"access-(?:sandbox|development|production)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
    ),
    ("GoCardless token", r"live_[A-Za-z0-9_\-=]{40}"),
    ("Coinbase / Kraken style key", r"organizations/[0-9a-f\-]{36}/apiKeys/[0-9a-f\-]{36}"),
    # mail and messaging
    ("SendGrid key", r"SG\.[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{16,64}"),
    ("Mailgun key", r"(?:key|pubkey)-[a-f0-9]{32}"),
    ("Mailchimp key", r"[a-f0-9]{32}-us\d{1,2}"),
    ("Twilio key", r"(?:SK|AC)[a-f0-9]{32}"),
    ("Postmark / Mandrill key", r"md-[A-Za-z0-9_\-]{22}"),
    ("Sendinblue / Brevo key", r"xkeysib-[a-f0-9]{64}(?:-[A-Za-z0-9]{16})?"),
    ("Mapbox secret token", r"sk\.eyJ[A-Za-z0-9_\-]{50,}\.[A-Za-z0-9_\-]{20,}"),
    # generic shapes
    ("JSON Web Token", r"eyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]{5,}"),
)

# PEM blocks can hold spaces and newlines; an unclosed block (a cut-off paste) is hidden to the end.
PEM_BLOCK = re.compile(
    r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
    re.DOTALL,
)
PUTTY_KEY = re.compile(r"(?s)PuTTY-User-Key-File-\d.*?(?:Private-MAC: [0-9a-f]+|\Z)")
_TOKEN_BODY = "|".join(f"(?:{p})" for _, p in TOKEN_FORMATS)
# Tokens are whole words: not glued to letters or digits on either side.
TOKEN_IN_WORD = re.compile(r"(?<![A-Za-z0-9])(?:" + _TOKEN_BODY + r")(?![A-Za-z0-9])")
# Candidate runs: a token is at least 16 characters without spaces; only such runs are checked against the table.
CANDIDATE = re.compile(r"[A-Za-z0-9_.\-+/=:~%@?&]{16,}")

# scheme://user:password@host (user may be empty, as in redis://:pw@host)
URL_PASSWORD = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://[^/\s:@\"'<>]*:)([^/\s@\"'<>]+)(@)")
# A token used as the user part of a URL (https://ghp_xxx@github.com) is caught by the table; Sentry DSNs:
SENTRY_DSN = re.compile(r"(?i)\b(https?://)([a-f0-9]{32})(@[\w.\-]*sentry)")


TOKEN_AT = re.compile(r"(?:" + _TOKEN_BODY + r")(?![A-Za-z0-9])")


def _tokens_in(run: str, repl: str) -> str:
    """Redact table formats in one candidate run, trying only where a word starts (fast: one C-level match
    of the whole table per word instead of one per character)."""
    out: list[str] = []
    pos = 0
    i = 0
    n = len(run)
    while i < n:
        if i == 0 or not run[i - 1].isalnum():
            m = TOKEN_AT.match(run, i) if run[i].isalnum() or run[i] in "/" else None
            if m is not None and m.end() > i:
                out += [run[pos:i], repl]
                pos = i = m.end()
                continue
        i += 1
    if not out:
        return run
    out.append(run[pos:])
    return "".join(out)


class _TokenScanner:
    """`sub`-like: redacts every table format, scanning only candidate runs (fast on large texts)."""

    def sub(self, repl: str, text: str) -> str:
        if "PRIVATE KEY" in text:
            text = PEM_BLOCK.sub(repl, text)
        if "PuTTY-User-Key-File" in text:
            text = PUTTY_KEY.sub(repl, text)
        if "://" in text:
            text = URL_PASSWORD.sub(
                lambda m: m.group(0) if m.group(2).startswith("[REDACTED") else f"{m.group(1)}{repl}{m.group(3)}",
                text,
            )
            text = SENTRY_DSN.sub(lambda m: f"{m.group(1)}{repl}{m.group(3)}", text)
        return CANDIDATE.sub(lambda m: _tokens_in(m.group(0), repl), text)


TOKEN_PATTERN = _TokenScanner()

# -- command lines ------------------------------------------------------------------------------------------
# Each has a group `value`: the secret. Quoted values are taken whole.
Needles = tuple[str, ...]


def _command_pattern(prefix: str, *needles: str) -> tuple[re.Pattern[str], Needles]:
    """`prefix` then a value: bare, single- or double-quoted (the group `value` is the inside). The pattern
    runs only on texts holding one of the lower-case `needles` (none: always), which keeps large texts fast."""
    value = r"(?:'(?=[^'\n]*')|\"(?=[^\"\n]*\"))?(?P<value>(?<=')[^'\n]+(?=')|(?<=\")[^\"\n]+(?=\")|[^\s'\"`;|&)]+)"
    return re.compile(prefix + value), needles


COMMAND_PATTERNS: tuple[tuple[re.Pattern[str], Needles], ...] = (
    # mysql -pSECRET / mysqldump -p'SECRET' (a bare -p prompts; -P is the port)
    _command_pattern(r"(?i:\b(?:mysql\w*|mariadb\w*|mongo\w*)\b)[^\n;|&]*?\s-p", "mysql", "mariadb", "mongo"),
    # curl -u user:pass / --user user:pass / wget --http-user=u --http-password=p / smbclient -U user%pass
    _command_pattern(r"\b(?:curl|http|httpie|xh)\b[^\n;|&]*?\s(?:-u|--user)[ =]['\"]?[^\s:'\"]*:", "-u", "--user"),
    _command_pattern(r"\bsmbclient\b[^\n;|&]*?\s-U\s*['\"]?[^\s%'\"]+%", "smbclient"),
    # sshpass -p SECRET, redis-cli -a SECRET, ldapsearch -w SECRET, sqlcmd -P SECRET, htpasswd -b file user SECRET
    _command_pattern(r"\bsshpass\s+(?:-\w+\s+)*?-p\s*", "sshpass"),
    _command_pattern(r"\bredis-cli\b[^\n;|&]*?\s(?:-a|--pass)\s+", "redis-cli"),
    _command_pattern(r"\bldap\w+\b[^\n;|&]*?\s-w\s+", "ldap"),
    _command_pattern(r"\b(?:sqlcmd|bcp)\b[^\n;|&]*?\s-P\s*", "sqlcmd", "bcp"),
    _command_pattern(r"\bhtpasswd\s+(?=(?:[^\n]*\s)?-\w*b)(?:-\w+\s+)+\S+\s+\S+\s+", "htpasswd"),
    # docker login -p SECRET / -u user -p SECRET; helm repo add --password; keytool -storepass / -keypass
    _command_pattern(r"\b(?:docker|podman|nerdctl|helm|oras|skopeo)\b[^\n;|&]*?\s-p\s+", " -p"),
    _command_pattern(
        r"\s-(?:storepass|keypass|srcstorepass|deststorepass|srckeypass|destkeypass|passin|passout|pass)\s+(?:pass:)?",
        "pass",
    ),
    _command_pattern(r"\bpass:", "pass:"),
    # aws configure set aws_secret_access_key SECRET (and the session token, and the key id)
    _command_pattern(
        r"\baws\s+configure\s+set\s+(?:[\w.]+\.)?aws_(?:secret_access_key|session_token|access_key_id)\s+", "aws_"
    ),
    # --password SECRET, --token=SECRET, --api-key SECRET, --client-secret SECRET, --db-pass SECRET
    _command_pattern(
        r"(?i)(?<![\w-])--?[\w-]*(?:password|passwd|passphrase|pass|token|secret|api-?key|apikey|access-key|auth-key"
        r"|private-key-data|license-key|webhook-url|credentials?)(?:=|[ \t]+)",
        "pass",
        "token",
        "secret",
        "key",
        "cred",
        "webhook",
    ),
    # .netrc: machine host login user password SECRET (on one line, or a line of its own)
    _command_pattern(
        r"(?im)(?:\bmachine\s+\S+|\bdefault)\s+(?:login\s+\S+\s+)?(?:account\s+\S+\s+)?password\s+",
        "machine",
        "default",
    ),
    _command_pattern(r"(?m)^[ \t]*password[ \t]+(?=\S+[ \t]*$)", "password"),
    # .pgpass: host:port:database:user:password
    _command_pattern(r"(?<![\w.:/\-])[\w.\-*]+:(?:\d{1,5}|\*):[\w.\-*]+:[\w.\-@*]+:(?=\S)", ":"),
    # HTTP headers that carry credentials (curl -H, raw requests, logs)
    _command_pattern(
        r"(?i)\b(?:authorization|proxy-authorization)[\"']?\s*[:=]\s*(?:(?-i:[fb])?[\"'])?(?:bearer|basic|token|digest|bot|sso-key|apikey)?\s*"
        r"(?!bearer\b|basic\b)",
        "authorization",
    ),
    _command_pattern(
        r"(?i)\b(?:x-[\w-]*(?:key|token|secret|auth|signature|password)|api-?key|private-token|x-api-key|cookie"
        r"|set-cookie|x-amz-security-token)[\"']?\s*:\s*[\"']?",
        "x-",
        "api",
        "private-token",
        "cookie",
    ),
    _command_pattern(r"(?i)\bbearer\s+(?=[A-Za-z0-9._~+/=\-]*\d|[A-Za-z0-9._~+/=\-]{24,})", "bearer"),
    # URL query parameters that carry secrets
    _command_pattern(
        r"(?i)[?&](?:access_token|refresh_token|id_token|token|api_key|apikey|key|secret|client_secret|password"
        r"|sig|signature|x-amz-signature|x-amz-credential|x-goog-signature|auth|code)=",
        "token=",
        "key=",
        "secret=",
        "password=",
        "sig=",
        "signature=",
        "credential=",
        "auth=",
        "code=",
    ),
)

# -- names that hold secrets -----------------------------------------------------------------------------------
# The keyword must end the name (`max_tokens`, `tokenizer`, `password_hash` are not secrets); any prefix is
# allowed (`DB_PASSWORD`, `AWS_SECRET_ACCESS_KEY`, `GITHUB_PAT`, `SLACK_WEBHOOK_URL`).
_KEYWORDS = (
    r"password|passwd|passphrase|passcode|pwd|secret|token|api[_\-]?key|apikey|access[_\-]?key(?:[_\-]?id)?"
    r"|secret[_\-]?key|private[_\-]?key|client[_\-]?secret|auth[_\-]?token|credentials?|creds"
    r"|license[_\-]?key|licence[_\-]?key|signing[_\-]?key|encryption[_\-]?key|master[_\-]?key|app[_\-]?key"
    r"|consumer[_\-]?key|account[_\-]?key|webhook(?:[_\-]?url)?|connection[_\-]?string|conn[_\-]?str|dsn"
    r"|(?<=[_.\-])pass|(?<=[_.\-])pat|(?<=[_.\-])auth|(?<![A-Za-z])auth|(?<![A-Za-z])pass|identitytoken|sas"
)
# UPPER_CASE names ending in _KEY are environment variables, and those are secrets (STRIPE_KEY, MAPS_KEY).
_ENV_KEY = r"[A-Z0-9_]*_KEY"
SECRET_NAME = r"(?:[A-Za-z0-9_.\-]*?(?i:" + _KEYWORDS + r")|" + _ENV_KEY + ")"
KEYED_NAME = re.compile(r"^[\"']?(?:" + SECRET_NAME + r")[\"']?$")

SECRET_NAME_RE = re.compile(SECRET_NAME)
# Any name followed by `=`, `:` or `:=`; the value is read in a lookahead (not consumed), so a match on an
# ordinary name never hides a secret assignment inside its value. redact.py keeps the secret names only.
# A quote may be escaped (`\"`): JSON inside a JSON string, as tool output often shows it.
ASSIGNMENT = re.compile(
    r"(?<![A-Za-z0-9_.\-])(?P<name>[A-Za-z0-9_.\-]{2,100})(?![A-Za-z0-9_])"
    r"(?P<sep>\\?[\"']?[ \t]*(?:(?<![=!<>])=(?![=>~])|:=|:(?![:/]))[ \t]*\\?)"
    r"(?=(?P<q>[\"'`])(?P<qvalue>[^\"'`\n]*?)\\?(?P=q)|(?P<bare>(?:[^\s\"'`,;)\]}\\]|\\(?![\"']))+))"
)
ASSIGNMENT_NEEDLES = ("pass", "pwd", "secret", "token", "key", "auth", "cred", "pat", "webhook", "dsn", "conn", "sas")

# "the password is hunter2": a value with a digit or a symbol, after "password/token/secret is|was|:".
PROSE_SECRET = re.compile(
    r"(?i)\b(?:password|passphrase|passcode|pwd|secret|token|api key)\s+(?:is|was|=|of)\s+[\"'`]?"
    r"(?P<value>(?=[^\s\"'`]*[\d!@#$%^&*])(?![\d.,:]+\b)[^\s\"'`(\[{]{4,}?)(?=\\?[\"'`]?[.,;!?)\]}]*(?:\s|$))"
)

# -- the guard: values that are code or placeholders, not secrets ---------------------------------------------
_PLACEHOLDER = re.compile(
    r"(?i)^(?:\$.*|<.*>|<.*|\{.*|%\(?\w*\)?s|\[redacted.*|\*+|x{3,}|\.\.\.|…|null|none|nil|true|false|yes|no"
    r"|on|off|undefined|str|string|bytes|number|int|bool|boolean|float|any|object|required|optional|secretstr"
    r"|changeme|placeholder|example|redacted|hidden|masked|empty|\?+|-+|_+|#+|\.+)$"
)
_CODE_VALUE = re.compile(
    r"^(?:await\s+|new\s+|not\s+|lambda\b|function\b|async\b|\()"  # expressions, a tuple
    r"|^[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*\s*[(\[]"  # a call or subscript: input(...), os.environ[...]
    r"|^(?:self|this|cls|os|env|process|config|settings|args|opts|options|request|req|ctx|params|kwargs|props"
    r"|secrets|vault|keyring|getpass|sys|st|environ)\.[A-Za-z_]"  # attribute access on a known object
)
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z_]*(?:\.[A-Za-z_][A-Za-z_]*)*$")
_PATH_VALUE = re.compile(r"^(?:~|\.{1,2})?/[\w.\-/@+]*$")


def is_placeholder(value: str) -> bool:
    """A value that stands for a secret without being one: `$VAR`, `{token}`, `<key>`, `***`, `changeme`."""
    return bool(_PLACEHOLDER.match(value.strip()))


def is_ordinary_value(name: str, sep: str, quote: str, value: str, text: str, at: int) -> bool:
    """True when an assigned value is code, a placeholder, a number, a path or already redacted: keep it."""
    v = value.strip()
    if not v or v.startswith("[REDACTED") or v.startswith("[private"):
        return True
    if _PLACEHOLDER.match(v):
        return True
    if re.fullmatch(r"[\d.:\-+e]+", v) and len(v) < 12:
        return True  # a number, a port, a version, a date
    bare = name.strip("\"'").lower()
    if bare in ("pwd", "oldpwd") and _PATH_VALUE.match(v):
        return True  # the shell's working directory
    if not quote:
        if v in _CODE_KEYWORDS or v.lower() in _PROSE_WORDS:
            return True
        if ":" in sep and "=" not in sep and _TYPE_NAME.match(v):
            after = text[at + len(value) : at + len(value) + 3].lstrip()
            if "." in v or sum(c.isupper() for c in v) >= 2 or after[:1] in (",", ")", "|", "=", "]"):
                return True  # a type annotation: `auth: AuthTypes | None`, `cookie: Cookie,`
        if _PATH_VALUE.match(v) and not re.search(r"\d", v.split("/")[-1] or "x"):
            return True
        if _CODE_VALUE.search(v):
            return True
        if len(v) < 3:
            return True
        # `password=password`, `token: str`, `secret=settings.secret`: code, when the name is code-style
        # (env-style UPPER names and config keys take bare words as values).
        if (
            _IDENTIFIER.match(v)
            and "=" in sep
            and not name.isupper()
            and ("_" in v or "." in v or v.lower() == bare or v.lower() in _CODE_WORDS)
        ):
            return True
        if (
            _IDENTIFIER.match(v)
            and name[:1].islower()
            and "=" in sep
            and text[at + len(value) : at + len(value) + 1] in ("(", "[", ".")
        ):
            return True
    else:
        if (
            re.search(r"\{[\w.]*\}|%\(\w+\)s|\$\{?\w+\}?", v)
            and len(re.sub(r"\{[\w.]*\}|%\(\w+\)s|\$\{?\w+\}?", "", v)) < 3
        ):
            return True  # a template: "{token}", "${DB_PASSWORD}"
        if v.endswith(":") and " " in v:
            return True  # a prompt: "Password: "
    return False


# A type name: CamelCase, maybe dotted (`_t.AuthType`), no digits.
_TYPE_NAME = re.compile(r"^(?:[A-Za-z_]\w*\.)*_?[A-Z][A-Za-z]*$")
# Words that follow "pass:" or "token:" in prose, never a secret on their own.
_PROSE_WORDS = frozenset("the a an this that these those is are was to and or for with in on of it its".split())
_CODE_KEYWORDS = frozenset("await new not lambda function async yield typeof void delete".split())
_CODE_WORDS = frozenset(
    "password passwd secret token key value none null self this args kwargs data result response config "
    "settings env environ default creds credentials auth".split()
)
