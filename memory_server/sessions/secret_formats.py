"""Secrets recognised by their shape alone: provider token formats, with their documented prefixes.

A plain table for `secret_scan.py`. Each format is public (a provider documents the prefix and alphabet of
its keys) and named, so a missed or over-eager one is easy to find. Every quantifier is bounded and the
long ones possessive, and the table is matched as one regex: a match attempt at one position reads a
bounded number of characters, so a text of any content is scanned in linear time. The base64-wrapped blobs
are the exception: they read their whole run, possessively, and may only start where a run of their
characters starts (`_RUN_START`), so each run is read once, still in linear time.

`glue`: the prefix is distinctive enough to be found glued to a letter or digit on its left (`xghp_…`), as
escaped or encoded text leaves it; other formats need a word boundary there.
"""

from __future__ import annotations

import re

REDACTED = "[REDACTED]"

_AN = "A-Za-z0-9"
_URL = "A-Za-z0-9_\\-"
_B64 = "A-Za-z0-9+/"
_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"

# (what it is, pattern, glue). A pattern matches the secret itself; the whole match becomes [REDACTED].
TOKEN_FORMATS: tuple[tuple[str, str, bool], ...] = (
    # AI providers
    ("Anthropic key", rf"sk-ant-(?:api|admin|sid|oat)\d{{2}}-[{_URL}]{{20,200}}+", True),
    ("Anthropic key (short form)", rf"sk-ant-[{_URL}]{{8,200}}+", True),
    ("OpenAI key", rf"sk-(?:proj-|svcacct-|admin-|None-)?[{_AN}][{_URL}]{{15,250}}+", True),
    ("OpenRouter key", r"sk-or-v1-[a-f0-9]{64}", True),
    ("Groq key", rf"gsk_[{_AN}]{{40,80}}+", True),
    ("xAI key", rf"xai-[{_AN}]{{60,100}}+", True),
    ("Perplexity key", rf"pplx-[{_AN}]{{40,60}}+", True),
    ("Replicate token", rf"r8_[{_AN}]{{37}}", False),
    ("Hugging Face token", r"(?:hf_|api_org_)[A-Za-z]{30,40}+", True),
    ("Cohere / Mistral style key", r"co-[A-Za-z0-9]{40}", False),
    # cloud
    ("AWS access key id", r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}", True),
    ("AWS session token", r"(?:FwoGZXIvYXdzE|IQoJb3JpZ2luX2Vj)[A-Za-z0-9+/=]{20,2000}+", True),
    ("Google API key", r"AIza[0-9A-Za-z_\-]{35}", True),
    ("Google OAuth client secret", rf"GOCSPX-[{_URL}]{{20,60}}+", True),
    ("Google OAuth access token", rf"ya29\.[{_URL}.]{{20,400}}+", True),
    ("Google OAuth refresh token", rf"1//0[{_URL}]{{30,200}}+", False),
    ("Azure storage account key", rf"(?i:AccountKey|SharedAccessKey)=[{_B64}]{{20,200}}+={{0,2}}", True),
    ("Azure SAS signature", r"(?i:[?&]sig)=[A-Za-z0-9%+/=]{20,200}+", False),
    ("Azure AD client secret", r"[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}", False),
    ("DigitalOcean token", r"do[por]_v1_[a-f0-9]{64}", True),
    ("Alibaba access key", r"LTAI[A-Za-z0-9]{17,24}+", True),
    (
        "IBM / Yandex IAM token",
        rf"(?:t1\.[{_URL}]{{20,200}}+={{0,2}}(?:\.[{_URL}]{{20,200}}+={{0,2}})?|AQVN[{_URL}]{{35,38}}+)",
        True,
    ),
    ("Yandex legacy key", rf"y[0-3]_[{_URL}]{{55}}", False),
    ("Heroku API key (new)", rf"HRKU-[{_URL}]{{40,80}}+", True),
    ("Fly.io token", rf"(?:fo1_[{_URL}]{{43}}|fm[12][ar]?_[A-Za-z0-9+/=_\-]{{50,2000}}+)", True),
    ("Scalingo token", rf"tk-us-[{_URL}]{{48}}", True),
    ("Cloudflare origin CA key", r"v1\.0-[a-f0-9]{24}-[a-f0-9]{146}", True),
    ("ClickHouse Cloud secret", rf"4b1d[{_AN}]{{38}}", False),
    ("Databricks token", r"dapi[a-f0-9]{32}(?:-\d)?", True),
    ("Dynatrace token", r"dt0c01\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}", True),
    ("New Relic key", r"NR(?:AK|JS|II|AA)-[A-Za-z0-9\-]{19,40}+", True),
    ("Grafana token", r"(?:glc_[A-Za-z0-9+/]{32,400}+={0,3}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8})", True),
    ("Grafana API key", r"eyJrIjoi[A-Za-z0-9]{40,400}+={0,3}", True),
    ("Sentry token", r"(?:sntrys_eyJ[A-Za-z0-9+/=_\-]{30,600}+|sntryu_[a-f0-9]{64})", True),
    ("Pulumi token", r"pul-[a-f0-9]{40}", True),
    ("Terraform Cloud token", rf"[{_AN}]{{14}}\.atlasv1\.[A-Za-z0-9_=\-]{{60,70}}+", True),
    ("Vault token", rf"(?:hv[sbr]\.[{_URL}]{{24,400}}+|s\.(?=[A-Za-z]{{0,23}}\d)[{_AN}]{{24}})", True),
    ("Doppler token", rf"dp\.(?:pt|st|sa|ct|scim|audit)\.[{_URL}]{{40,60}}+", True),
    ("1Password service token", r"ops_eyJ[A-Za-z0-9+/=_\-]{50,1200}+", True),
    (
        "1Password secret key",
        r"A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}",
        True,
    ),
    ("age secret key", r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}", True),
    ("Supabase token", rf"(?:sbp_[a-f0-9]{{40}}|sb_secret_[{_URL}]{{20,80}}+)", True),
    ("PlanetScale token", r"pscale_(?:tkn|oauth|pw)_[A-Za-z0-9=._\-]{32,64}+", True),
    ("Netlify / Render / Vercel token", rf"(?:nfp_|rnd_|vcp_|vci_|vca_|vcr_|vck_)[{_AN}]{{24,80}}+", True),
    ("JFrog key", rf"(?:AKCp[{_AN}]{{60,80}}+|cmVmd[{_AN}]{{50,70}}+)", True),
    ("OpenShift token", rf"sha256~[{_URL}]{{43}}", True),
    ("Harness token", rf"(?:pat|sat)\.[{_URL}]{{22}}\.[{_AN}]{{24}}\.[{_AN}]{{20}}", False),
    ("Infracost key", rf"ico-[{_AN}]{{32}}", True),
    ("Octopus key", r"API-[A-Z0-9]{26}", False),
    ("Prefect key", rf"pnu_[{_AN}]{{36}}", True),
    ("Readme key", r"rdme_[a-z0-9]{70}", True),
    ("Sourcegraph token", r"sgp_(?:local_|[a-fA-F0-9]{16}_)?[a-fA-F0-9]{40}", True),
    ("SettleMint token", rf"sm_(?:pat|aat|sat)_[{_AN}]{{16}}", True),
    ("Tailscale key", rf"tskey-(?:api|auth|client|webhook|scim)-[{_AN}]{{6,40}}+-[{_AN}]{{20,80}}+", True),
    ("Buildkite token", r"bkua_[a-f0-9]{40}", True),
    ("CircleCI token", rf"CCIPAT_[{_AN}]{{22}}_[a-f0-9]{{40}}", True),
    ("Defined Networking key", r"dnkey-[a-z0-9=_\-]{26}-[a-z0-9=_\-]{52}", True),
    ("LangSmith key", r"lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}", True),
    ("Pinecone key", r"pcsk_[A-Za-z0-9_]{50,120}+", True),
    ("Adobe client secret", rf"p8e-[{_AN}]{{32}}", True),
    ("Contentful token", rf"CFPAT-[{_URL}]{{43}}", True),
    ("Dropbox token", rf"sl\.[{_URL}=]{{100,1400}}+", False),
    ("Dropbox long-lived token", rf"[{_AN}]{{11}}AAAAAAAAAA[{_URL}=]{{43}}", False),
    ("HubSpot token", rf"pat-(?:na|eu|ap)\d-{_UUID}", True),
    (
        "Authress key",
        rf"(?:sc|ext|scauth|authress)_[{_AN}]{{5,30}}+\.[{_AN}]{{4,6}}+\.acc[_\-][a-z0-9\-]{{10,32}}+\.[{_URL}+/=]{{30,120}}+",
        True,
    ),
    ("Intra42 secret", r"s-s4t2(?:ud|af)-[a-fA-F0-9]{64}", True),
    ("MaxMind license key", rf"[{_AN}]{{6}}_[{_AN}]{{29}}_mmk", False),
    ("Okta token", r"00[A-Za-z0-9_=\-]{40}(?=[\s\"'`;,]|$)", False),
    # code hosting and packages
    ("GitHub token", rf"(?:ghp|gho|ghu|ghs|ghr)_[{_AN}]{{30,255}}+", True),
    ("GitHub fine-grained token", r"github_pat_[A-Za-z0-9_]{22,255}+", True),
    ("GitLab token", rf"gl(?:pat|ptt|rt|dt|ft|soat|cbt|imt|agent|oas|wt|ffct)-[{_URL}.]{{20,300}}+", True),
    ("GitLab session cookie", r"_gitlab_session=[0-9a-z]{32}", True),
    ("GitLab runner registration token", rf"GR1348941[{_URL}]{{20}}", True),
    ("Bitbucket / Atlassian token", r"(?:ATATT3|ATCTT3|ATBB)[A-Za-z0-9_\-=+/]{24,300}+", True),
    ("npm token", rf"npm_[{_AN}]{{36}}", True),
    ("PyPI token", rf"pypi-AgEIcHlwaS5vcmc[{_URL}]{{30,1000}}+", True),
    ("RubyGems key", r"rubygems_[a-f0-9]{48}", True),
    ("Clojars token", r"(?i:CLOJARS_)[a-zA-Z0-9]{60}", True),
    ("NuGet key", r"oy2[a-z0-9]{43}", False),
    ("Docker Hub token", rf"dckr_(?:pat|oat)_[{_URL}]{{20,80}}+", True),
    ("Postman key", r"PMAK-[a-fA-F0-9]{24}-[a-fA-F0-9]{34}", True),
    ("Linear key", rf"lin_(?:api|oauth)_[{_AN}]{{40}}", True),
    ("Notion token", rf"(?:secret_[{_AN}]{{43}}|ntn_[{_AN}]{{40,60}}+)", True),
    ("Airtable token", rf"pat[{_AN}]{{14}}\.[a-f0-9]{{64}}", False),
    ("Figma token", rf"figd_[{_URL}]{{40,50}}+", True),
    ("Typeform token", r"tfp_[A-Za-z0-9_\-=.]{59}", True),
    ("Frame.io token", r"fio-u-[A-Za-z0-9_\-=]{64}", True),
    ("Asana token", r"[0-9]/[0-9]{16}:[a-f0-9]{32}", False),
    # chat and webhooks
    ("Slack token", rf"xox[abposre]-[{_AN}\-]{{10,250}}+", True),
    ("Slack refresh / config token", r"xoxe(?:\.xox[bp])?-\d-[A-Za-z0-9]{100,200}+", True),
    ("Slack app token", r"xapp-\d-[A-Z0-9]{1,30}+-\d{1,30}+-[a-zA-Z0-9]{20,100}+", True),
    (
        "Slack webhook",
        r"(?:https?://)?hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/\-+%]{20,200}+",
        True,
    ),
    (
        "Discord webhook",
        rf"(?:https?://)?(?:\w{{1,20}}\.)?discord(?:app)?\.com/api/webhooks/\d{{5,30}}+/[{_URL}]{{20,120}}+",
        True,
    ),
    ("Discord bot token", rf"[MNO][{_URL}]{{23,25}}\.[{_URL}]{{6}}\.[{_URL}]{{27,38}}", False),
    (
        "Microsoft Teams webhook",
        r"(?:https?://)?[\w.\-]{1,60}webhook\.office\.com/webhookb2/[A-Za-z0-9@/\-]{30,300}+",
        True,
    ),
    (
        "Power Automate / Logic Apps URL",
        r"https?://[\w.\-]{1,100}logic\.azure\.com[^\s\"'<>]{0,400}?[?&]sig=[A-Za-z0-9%_\-]{20,200}+",
        True,
    ),
    ("Telegram bot token", rf"(?:bot)?\d{{5,16}}:A[{_URL}]{{34}}", False),
    ("Zapier webhook", r"hooks\.zapier\.com/hooks/catch/[\d/A-Za-z]{8,80}+", True),
    ("IFTTT webhook", rf"maker\.ifttt\.com/trigger/[^\s/]{{1,100}}+/with/key/[{_URL}]{{16,80}}+", True),
    (
        "Google Chat webhook",
        r"chat\.googleapis\.com/v1/spaces/[^\s\"'<>?]{1,200}+\?[^\s\"'<>]{0,200}?(?:key|token)=[A-Za-z0-9%_\-=]{20,200}+",
        True,
    ),
    ("Twitter bearer token", r"A{22}[A-Za-z0-9%=+/]{30,200}+", True),
    ("Facebook access token", r"EAA[A-Za-z0-9]{60,400}+", False),
    ("Facebook app token", r"\d{15,16}[|][0-9A-Za-z_\-]{27,40}", False),
    ("Mattermost / generic webhook path", r"/hooks/[a-z0-9]{26}", False),
    # payments and commerce
    ("Stripe key", rf"(?:sk|rk|pk)_(?:test|live|prod)_[{_AN}]{{10,120}}+", True),
    ("Stripe webhook secret", r"whsec_[A-Za-z0-9+/=]{20,80}+", True),
    ("Square token", rf"(?:sq0atp-[{_URL}]{{22,60}}+|sq0csp-[{_URL}]{{43}}|EAAA[{_URL}+=]{{22,80}}+)", True),
    ("Shopify token", r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}", True),
    ("Flutterwave key", r"FLW(?:SECK|PUBK)(?:_TEST)?-[a-hA-H0-9]{12,32}+(?:-X)?", True),
    ("Shippo token", r"shippo_(?:live|test)_[a-fA-F0-9]{40}", True),
    ("Duffel token", r"duffel_(?:test|live)_[A-Za-z0-9_\-=]{43}", True),
    ("EasyPost token", rf"EZ[AT]K[{_AN}]{{54}}", True),
    ("Plaid token", rf"access-(?:sandbox|development|production)-{_UUID}", True),
    ("GoCardless token", r"live_[A-Za-z0-9_\-=]{40}", False),
    ("Lob key", r"(?:live|test)_(?:pub_)?[a-f0-9]{31,35}", False),
    ("Coinbase / Kraken style key", r"organizations/[0-9a-f\-]{36}/apiKeys/[0-9a-f\-]{36}", True),
    # mail and messaging
    ("SendGrid key", r"SG\.[A-Za-z0-9_\-]{16,32}+\.[A-Za-z0-9_\-]{16,64}+", True),
    ("Mailgun key", r"(?:key|pubkey)-[a-f0-9]{32}", False),
    ("Mailgun signing key", r"[a-h0-9]{32}-[a-h0-9]{8}-[a-h0-9]{8}", False),
    ("Mailchimp key", r"[a-f0-9]{32}-us\d{1,2}", False),
    ("Twilio SID and auth token", r"AC[a-f0-9]{32}[\"'\s,:]{1,8}+[a-f0-9]{32}", False),
    ("Twilio key", r"(?:SK|AC)[a-fA-F0-9]{32}", False),
    ("Mandrill key", rf"md-[{_URL}]{{22}}", False),
    ("Sendinblue / Brevo key", r"xkeysib-[a-f0-9]{64}(?:-[A-Za-z0-9]{16})?", True),
    ("Mapbox token", r"[sp]k\.eyJ[A-Za-z0-9_\-]{50,400}+\.[A-Za-z0-9_\-]{20,100}+", True),
    ("Mapbox public token", r"pk\.[a-z0-9]{60}\.[a-z0-9]{22}", True),
    ("Sidekiq credentials", r"(?i:https?://)[a-f0-9]{8}:[a-f0-9]{8}@(?:gems|enterprise)\.contribsys\.com", True),
    # generic shapes
    ("JSON Web Token", rf"eyJ[{_URL}]{{5,1500}}+\.eyJ[{_URL}]{{5,4000}}+\.[{_URL}]{{0,1500}}+={{0,2}}", True),
    # Base64 blobs are read to the end of their run, however long (a cap would leave a longer one whole).
    ("JSON Web Token, base64-wrapped", r"ZXlK[A-Za-z0-9+/]{40,}+={0,2}", False),
    ("Private key, base64-wrapped", r"LS0tLS1CRUdJTi[A-Za-z0-9+/]{20,}+={0,2}", True),
    ("Docker config, base64-wrapped", r"eyJhdXRocyI6[A-Za-z0-9+/]{10,}+={0,2}", True),
)

_CLASS = re.compile(r"\[(?!\^)((?:\\.|[^\]\\])+)\]")
_LITERAL_START = re.compile(r"(?:[A-Za-z0-9_~\-]|\\[.\-])+")
_CLASS_ITEM = re.compile(r"(\\.|[^\\])(?:-(\\.|[^\\]))?")


def _body_chars(pattern: str) -> str:
    """The characters beyond letters and digits that the pattern's classes allow, as a class body."""
    extra: set[str] = set()
    for body in _CLASS.findall(pattern):
        for m in _CLASS_ITEM.finditer(body):
            low, high = m.group(1)[-1], (m.group(2) or m.group(1))[-1]
            extra.update(c for c in "_-+/=.~%" if low <= c <= high and not m.group(1).startswith("\\w"))
            if m.group(1) == "\\w":
                extra.add("_")
    return "".join("\\" + c if c == "-" else c for c in sorted(extra))


# Formats that read far (hundreds of characters or more) through a class holding their own prefix: such a
# token must start a run of that class, or `eyJ-eyJ-eyJ-...` would be read once per `eyJ`.
_RUN_START = frozenset(
    """AWS session token;Google OAuth access token;Fly.io token;Grafana API key;Sentry token;1Password service token;
    PyPI token;Dropbox token;Bitbucket / Atlassian token;Twitter bearer token;Facebook access token;JSON Web Token;
    JSON Web Token, base64-wrapped;Private key, base64-wrapped;Docker config, base64-wrapped;Vault token;
    Slack refresh / config token;Mapbox token;Grafana token""".replace("\n    ", "").split(";")
)


def _branch(label: str, pattern: str) -> str:
    """The pattern, for a format in _RUN_START not starting inside a run of its own characters (in
    `eyJ-eyJ-eyJ-...` only the first `eyJ` starts a token, so no run is read more than once). When the pattern
    starts with a literal character the check follows it (`e(?<![-_].)yJ...`), so the regex engine still
    skips the branch at a glance at other characters."""
    extra = _body_chars(pattern) if label in _RUN_START else ""
    if not extra:
        return f"(?:{pattern})"
    if pattern[:1].isalnum() and pattern[1:2] not in ("{", "?", "*", "+", "|"):
        return f"(?:{pattern[0]}(?<![{extra}].){pattern[1:]})"
    return f"(?<![{extra}])(?:{pattern})"


def _literal_prefix(pattern: str) -> str:
    m = _LITERAL_START.match(pattern)
    return m.group().replace("\\", "") if m else ""


# A token is at least 10 characters long: the look-ahead turns away most positions at once.
TOKEN = re.compile(
    r"(?<![A-Za-z0-9])(?=[A-Za-z0-9/?&_][A-Za-z0-9_\-+/=.~%:|@?&]{9})(?:"
    + "|".join(_branch(label, p) for label, p, _g in TOKEN_FORMATS)
    + r")(?![A-Za-z0-9])"
)
# Distinctive formats glued to a letter or digit on their left (an escape's remains read raw, `xghp_...`):
# found by their prefix (a plain substring search: a few of them, as every text is searched for each), then
# matched there. Escapes themselves are undone by the decoded view, so this is the second line of defence.
GLUE_PREFIXES: tuple[str, ...] = (
    *("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "sk-ant-", "sk-proj-", "glpat-", "xoxb-", "xoxp-"),
    *("xapp-", "AKIA", "ASIA", "AIza", "npm_", "pypi-AgEIcHlwaS5vcmc", "dop_v1_", "shpat_", "sk_live_"),
)
GLUED_TOKEN = re.compile(
    r"(?:" + "|".join(f"(?:{p})" for label, p, glue in TOKEN_FORMATS if glue and label not in _RUN_START) + r")"
    r"(?![A-Za-z0-9])"
)


def glued_token_spans(text: str) -> list[tuple[int, int]]:
    """Tokens of the distinctive formats right after a letter or digit (`%22ghp_…` read raw, `xghp_…`)."""
    spans: list[tuple[int, int]] = []
    for prefix in GLUE_PREFIXES:
        at = text.find(prefix)
        while at != -1:
            nxt = at + len(prefix)
            if at > 0 and text[at - 1].isalnum():
                m = GLUED_TOKEN.match(text, at)
                if m:
                    spans.append(m.span())
                    nxt = m.end()
            at = text.find(prefix, nxt)
    return spans
