"""A corpus of secrets built at run time from format descriptions, and ordinary code that must survive.

Nothing here is a real key: every secret is random characters in the documented alphabet and length of
its format, and prefixes are joined at run time so no line of this file looks like a live key to a scanner.
`secret_cases()` gives (label, text carrying the secret, the secret's random part that must never show).
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable

UP = string.ascii_uppercase
LO = string.ascii_lowercase
DIG = string.digits
HEX = "0123456789abcdef"
ALNUM = UP + LO + DIG
URLSAFE = ALNUM + "_-"
B64 = ALNUM + "+/"


def _j(*parts: str) -> str:
    return "".join(parts)


class _Gen:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def s(self, alphabet: str, n: int) -> str:
        out = "".join(self.rng.choice(alphabet) for _ in range(n))
        # A secret always has a digit and a letter in it, as random keys of these lengths practically do.
        if n >= 8 and not any(c.isdigit() for c in out) and any(c.isdigit() for c in alphabet):
            out = out[:-1] + self.rng.choice(DIG)
        if n >= 8 and not any(c.isalpha() for c in out) and any(c.isalpha() for c in alphabet):
            out = self.rng.choice([c for c in alphabet if c.isalpha()]) + out[1:]
        return out


# (label, prefix, alphabet, length): a token is prefix + random characters.
def _token_formats(g: _Gen) -> list[tuple[str, str, str]]:
    """(label, whole token, random part)."""
    spec: list[tuple[str, str, str, int]] = [
        ("anthropic api", _j("sk-", "ant-", "api03-"), URLSAFE, 93),
        ("anthropic admin", _j("sk-", "ant-", "admin01-"), URLSAFE, 93),
        ("openai project", _j("sk-", "proj-"), URLSAFE, 120),
        ("openai service account", _j("sk-", "svcacct-"), URLSAFE, 100),
        ("openai legacy", _j("sk", "-"), ALNUM, 48),
        ("openrouter", _j("sk-", "or-", "v1-"), HEX, 64),
        ("groq", _j("gs", "k_"), ALNUM, 52),
        ("xai", _j("xa", "i-"), ALNUM, 80),
        ("perplexity", _j("pp", "lx-"), ALNUM, 48),
        ("replicate", _j("r8", "_"), ALNUM, 37),
        ("hugging face", _j("h", "f_"), UP + LO, 34),
        ("hugging face org", _j("api", "_org_"), UP + LO, 34),
        ("aws access key", _j("AK", "IA"), UP + DIG, 16),
        ("aws temporary key", _j("AS", "IA"), UP + DIG, 16),
        ("google api", _j("AI", "za"), URLSAFE, 35),
        ("google oauth secret", _j("GOC", "SPX-"), URLSAFE, 28),
        ("google access token", _j("ya", "29."), URLSAFE, 120),
        ("google refresh token", _j("1//", "0"), URLSAFE, 60),
        ("digitalocean pat", _j("dop", "_v1_"), HEX, 64),
        ("digitalocean oauth", _j("doo", "_v1_"), HEX, 64),
        ("digitalocean refresh", _j("dor", "_v1_"), HEX, 64),
        ("alibaba", _j("LT", "AI"), ALNUM, 20),
        ("heroku", _j("HR", "KU-"), URLSAFE, 60),
        ("fly.io", _j("fo", "1_"), URLSAFE, 43),
        ("scalingo", _j("tk-", "us-"), URLSAFE, 48),
        ("databricks", _j("da", "pi"), HEX, 32),
        ("new relic user", _j("NR", "AK-"), UP + DIG, 27),
        ("new relic browser", _j("NR", "JS-"), HEX, 19),
        ("grafana cloud", _j("gl", "c_"), ALNUM, 40),
        ("sentry user", _j("sntr", "yu_"), HEX, 64),
        ("pulumi", _j("pu", "l-"), HEX, 40),
        ("vault service", _j("hv", "s."), URLSAFE, 95),
        ("vault batch", _j("hv", "b."), URLSAFE, 120),
        ("doppler personal", _j("dp.", "pt."), ALNUM, 43),
        ("doppler service", _j("dp.", "st."), ALNUM, 43),
        ("supabase", _j("sb", "p_"), HEX, 40),
        ("planetscale", _j("pscale", "_tkn_"), URLSAFE, 43),
        ("netlify", _j("nf", "p_"), ALNUM, 40),
        ("render", _j("rn", "d_"), ALNUM, 32),
        ("openshift", _j("sha256", "~"), URLSAFE, 43),
        ("infracost", _j("ic", "o-"), ALNUM, 32),
        ("octopus", _j("AP", "I-"), UP + DIG, 26),
        ("prefect", _j("pn", "u_"), LO + DIG, 36),
        ("readme", _j("rd", "me_"), LO + DIG, 70),
        ("sourcegraph", _j("sg", "p_"), HEX, 40),
        ("github classic", _j("gh", "p_"), ALNUM, 36),
        ("github oauth", _j("gh", "o_"), ALNUM, 36),
        ("github user-to-server", _j("gh", "u_"), ALNUM, 36),
        ("github server-to-server", _j("gh", "s_"), ALNUM, 36),
        ("github refresh", _j("gh", "r_"), ALNUM, 36),
        ("github fine-grained", _j("github", "_pat_"), ALNUM + "_", 82),
        ("gitlab pat", _j("gl", "pat-"), URLSAFE, 20),
        ("gitlab pipeline trigger", _j("gl", "ptt-"), HEX, 40),
        ("gitlab runner", _j("gl", "rt-"), URLSAFE, 20),
        ("gitlab deploy", _j("gl", "dt-"), URLSAFE, 20),
        ("gitlab feed", _j("gl", "ft-"), URLSAFE, 20),
        ("gitlab registration", _j("GR13", "48941"), URLSAFE, 20),
        ("atlassian", _j("ATA", "TT3"), URLSAFE, 180),
        ("bitbucket", _j("AT", "BB"), ALNUM, 32),
        ("npm", _j("np", "m_"), ALNUM, 36),
        ("pypi", _j("pypi-", "AgEIcHlwaS5vcmc"), URLSAFE, 70),
        ("rubygems", _j("ruby", "gems_"), HEX, 48),
        ("clojars", _j("CLOJ", "ARS_"), LO + DIG, 60),
        ("nuget", _j("oy", "2"), LO + DIG, 43),
        ("docker hub", _j("dckr", "_pat_"), URLSAFE, 27),
        ("docker hub org", _j("dckr", "_oat_"), URLSAFE, 32),
        ("linear", _j("lin", "_api_"), ALNUM, 40),
        ("notion", _j("sec", "ret_"), ALNUM, 43),
        ("notion new", _j("nt", "n_"), ALNUM, 46),
        ("figma", _j("fi", "gd_"), URLSAFE, 40),
        ("slack bot", _j("xo", "xb-"), DIG, 12),
        ("slack user", _j("xo", "xp-"), DIG, 12),
        ("slack app-level", _j("xa", "pp-1-A"), UP + DIG, 10),
        ("stripe secret test", _j("sk", "_test_"), ALNUM, 99),
        ("stripe secret live", _j("sk", "_live_"), ALNUM, 99),
        ("stripe restricted live", _j("rk", "_live_"), ALNUM, 99),
        ("stripe restricted test", _j("rk", "_test_"), ALNUM, 24),
        ("stripe webhook", _j("wh", "sec_"), ALNUM, 32),
        ("square access", _j("sq0", "atp-"), URLSAFE, 22),
        ("square oauth secret", _j("sq0", "csp-"), URLSAFE, 43),
        ("shopify access", _j("shp", "at_"), HEX, 32),
        ("shopify custom app", _j("shp", "ca_"), HEX, 32),
        ("shopify private app", _j("shp", "pa_"), HEX, 32),
        ("shopify shared secret", _j("shp", "ss_"), HEX, 32),
        ("shippo", _j("shippo", "_live_"), HEX, 40),
        ("duffel", _j("duffel", "_test_"), URLSAFE, 43),
        ("easypost", _j("EZ", "AK"), LO + DIG, 54),
        ("sendgrid", _j("S", "G."), URLSAFE, 22),
        ("mailgun", _j("ke", "y-"), HEX, 32),
        ("twilio api key", _j("S", "K"), HEX, 32),
        ("brevo", _j("xkey", "sib-"), HEX, 64),
        ("age", _j("AGE-", "SECRET-KEY-1"), "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58),
        ("dynatrace", _j("dt0", "c01."), UP + DIG, 24),
        ("jfrog", _j("AK", "Cp"), ALNUM, 69),
        ("1password service", _j("ops", "_eyJ"), URLSAFE, 80),
        ("settlemint", _j("sm", "_pat_"), ALNUM, 16),
        ("typeform", _j("tf", "p_"), URLSAFE, 59),
        ("yandex", _j("AQ", "VN"), URLSAFE, 36),
        ("tailscale", _j("tskey-", "auth-", "k1a2b3CNTRL-"), ALNUM, 30),
        ("buildkite", _j("bk", "ua_"), HEX, 40),
        ("defined networking", _j("dnkey-", "a1b2c3d4e5f6g7h8i9j0k1l2m3-"), LO + DIG, 52),
        ("pinecone", _j("pc", "sk_"), ALNUM + "_", 72),
        ("adobe", _j("p8", "e-"), ALNUM, 32),
        ("contentful", _j("CF", "PAT-"), URLSAFE, 43),
        ("dropbox", _j("s", "l."), URLSAFE, 140),
    ]
    out = []
    for label, prefix, alphabet, n in spec:
        rand = g.s(alphabet, n)
        token = prefix + rand
        if label == "slack bot" or label == "slack user":
            tail = g.s(DIG, 13) + "-" + g.s(ALNUM, 24)
            token, rand = token + "-" + tail, rand + "-" + tail
        elif label == "slack app-level":
            tail = "-" + g.s(DIG, 13) + "-" + g.s(HEX, 64)
            token, rand = token + tail, rand + tail
        elif label == "sendgrid":
            tail = "." + g.s(URLSAFE, 43)
            token, rand = token + tail, rand + tail
        elif label == "dynatrace":
            tail = "." + g.s(UP + DIG, 64)
            token, rand = token + tail, rand + tail
        out.append((label, token, rand))
    # Formats whose secret is not one prefix and one run.
    composite: list[tuple[str, Callable[[], tuple[str, str]]]] = [
        ("mailchimp", lambda: (lambda r: (r + "-us" + g.s(DIG, 2)[:1] + "4", r))(g.s(HEX, 32))),
        ("telegram bot", lambda: (lambda r: (g.s(DIG, 10) + ":" + r, r))("AA" + g.s(URLSAFE, 33))),
        (
            "discord bot",
            lambda: (lambda r: ("M" + g.s(ALNUM, 23) + "." + g.s(URLSAFE, 6) + "." + r, r))(g.s(URLSAFE, 38)),
        ),
        (
            "jwt",
            lambda: (lambda r: (_j("ey", "JhbGciOiJIUzI1NiJ9.ey") + "J" + g.s(URLSAFE, 40) + "." + r, r))(
                g.s(URLSAFE, 43)
            ),
        ),
        (
            "slack webhook",
            lambda: (
                lambda r: (
                    _j("https://hooks", ".slack.com/services/T")
                    + g.s(UP + DIG, 10)
                    + "/B"
                    + g.s(UP + DIG, 10)
                    + "/"
                    + r,
                    r,
                )
            )(g.s(ALNUM, 24)),
        ),
        (
            "slack workflow webhook",
            lambda: (
                lambda r: (
                    _j("https://hooks", ".slack.com/workflows/T")
                    + g.s(UP + DIG, 10)
                    + "/A"
                    + g.s(UP + DIG, 10)
                    + "/"
                    + g.s(DIG, 18)
                    + "/"
                    + r,
                    r,
                )
            )(g.s(ALNUM, 24)),
        ),
        (
            "discord webhook",
            lambda: (lambda r: (_j("https://discord", ".com/api/webhooks/") + g.s(DIG, 18) + "/" + r, r))(
                g.s(URLSAFE, 68)
            ),
        ),
        (
            "teams webhook",
            lambda: (
                lambda r: (
                    "https://acme.webhook"
                    + ".office.com/webhookb2/"
                    + g.s(HEX, 8)
                    + "-1111-2222-3333-"
                    + g.s(HEX, 12)
                    + "@"
                    + g.s(HEX, 8)
                    + "/IncomingWebhook/"
                    + r
                    + "/"
                    + g.s(HEX, 8),
                    r,
                )
            )(g.s(HEX, 32)),
        ),
        (
            "azure storage",
            lambda: (
                lambda r: (
                    "DefaultEndpointsProtocol=https;AccountName=acmestore;AccountKey="
                    + r
                    + "==;EndpointSuffix=core.windows.net",
                    r,
                )
            )(g.s(B64, 86)),
        ),
        (
            "azure sas url",
            lambda: (
                lambda r: ("https://acme.blob.core.windows.net/c/f.txt?sv=2022-11-02&se=2026-01-01&sig=" + r + "%3D", r)
            )(g.s(ALNUM + "%", 43)),
        ),
        ("azure ad client secret", lambda: (lambda r: (g.s(ALNUM, 3) + "8Q~" + r, r))(g.s(ALNUM + "_~.-", 34))),
        ("twitter bearer", lambda: (lambda r: ("A" * 22 + r, r))(g.s(ALNUM + "%", 80))),
        ("facebook access token", lambda: (lambda r: ("EA" + "AB" + r, r))(g.s(ALNUM, 160))),
        ("circleci", lambda: (lambda r: (_j("CCI", "PAT_") + g.s(ALNUM, 22) + "_" + r, r))(g.s(HEX, 40))),
        ("langsmith", lambda: (lambda r: (_j("lsv2", "_pt_") + r + "_" + g.s(HEX, 10), r))(g.s(HEX, 32))),
        (
            "hubspot",
            lambda: (lambda r: (_j("pat-", "na1-") + r, r))(
                f"{g.s(HEX, 8)}-{g.s(HEX, 4)}-{g.s(HEX, 4)}-{g.s(HEX, 4)}-{g.s(HEX, 12)}"
            ),
        ),
        ("postman", lambda: (lambda r: (_j("PM", "AK-") + g.s(HEX, 24) + "-" + r, r))(g.s(HEX, 34))),
        ("airtable", lambda: (lambda r: (_j("pa", "t") + g.s(ALNUM, 14) + "." + r, r))(g.s(HEX, 64))),
        (
            "terraform cloud",
            lambda: (lambda r: (g.s(LO + DIG, 14) + ".atlas" + "v1." + r, r))(g.s(LO + DIG + "_-", 67)),
        ),
        ("cloudflare origin ca", lambda: (lambda r: ("v1.0-" + g.s(HEX, 24) + "-" + r, r))(g.s(HEX, 146))),
        (
            "plaid",
            lambda: (lambda r: ("access-production-" + r, r))(
                f"{g.s(HEX, 8)}-{g.s(HEX, 4)}-{g.s(HEX, 4)}-{g.s(HEX, 4)}-{g.s(HEX, 12)}"
            ),
        ),
        (
            "zapier webhook",
            lambda: (lambda r: ("https://hooks.zapier" + ".com/hooks/catch/" + g.s(DIG, 7) + "/" + r + "/", r))(
                g.s(LO + DIG, 7) + "x1"
            ),
        ),
        (
            "url password",
            lambda: (lambda r: ("postgres://app:" + r + "@db.internal:5432/main", r))(g.s(ALNUM + "!%*", 18)),
        ),
        ("redis url password", lambda: (lambda r: ("redis://:" + r + "@cache.internal:6379/0", r))(g.s(ALNUM, 24))),
        (
            "token in git url",
            lambda: (lambda r: ("https://x-access-token:" + r + "@github.com/acme/app.git", r))(g.s(ALNUM, 30)),
        ),
        ("sentry dsn", lambda: (lambda r: ("https://" + r + "@o12345.ingest.sentry.io/678", r))(g.s(HEX, 32))),
        (
            "pem key",
            lambda: (
                lambda r: (
                    "-----BEGIN "
                    + "RSA PRIVATE KEY-----\nMIIE"
                    + r
                    + "\n"
                    + g.s(B64, 64)
                    + "\n-----END RSA "
                    + "PRIVATE KEY-----",
                    r,
                )
            )(g.s(B64, 60)),
        ),
        (
            "openssh key",
            lambda: (
                lambda r: (
                    "-----BEGIN "
                    + "OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA"
                    + r
                    + "\n-----END OPENSSH "
                    + "PRIVATE KEY-----",
                    r,
                )
            )(g.s(B64, 64)),
        ),
        (
            "pgp key",
            lambda: (
                lambda r: (
                    "-----BEGIN PGP "
                    + "PRIVATE KEY BLOCK-----\n\nlQdGBF"
                    + r
                    + "\n-----END PGP PRIVATE "
                    + "KEY BLOCK-----",
                    r,
                )
            )(g.s(B64, 64)),
        ),
        ("bearer header", lambda: (lambda r: ("Authorization: Bearer " + r, r))(g.s(URLSAFE + ".", 40))),
        ("basic header", lambda: (lambda r: ("Authorization: Basic " + r, r))(g.s(B64, 28) + "==")),
    ]
    for label, make in composite:
        token, rand = make()
        out.append((label, token, rand))
    return out


def _forms(g: _Gen) -> list[tuple[str, str, str]]:
    """Command-line and assignment forms: (label, text, secret)."""
    pw = lambda n=14: g.s(ALNUM, n - 2) + g.rng.choice("!#%") + g.s(DIG, 1)  # noqa: E731
    word = lambda n=16: g.s(ALNUM, n)  # noqa: E731
    forms: list[tuple[str, Callable[[str], str], Callable[[], str]]] = [
        ("mysql -p", lambda s: f"mysql -u root -p{s} shop", word),
        ("mysqldump -p quoted", lambda s: f"mysqldump -h db -u admin -p'{s}' shop > dump.sql", pw),
        ("mysql --password", lambda s: f"mysql --password={s} -u root", word),
        ("curl -u", lambda s: f"curl -u deploy:{s} https://ci.example.com/api/json", word),
        ("curl --user", lambda s: f"curl --user 'admin:{s}' https://nexus.example.com/repo", pw),
        ("sshpass -p", lambda s: f"sshpass -p {s} ssh deploy@10.0.0.5", word),
        ("sshpass -p quoted", lambda s: f"sshpass -p '{s}' scp build.tgz pi@raspberry:", pw),
        ("redis-cli -a", lambda s: f"redis-cli -h cache -a {s} ping", word),
        ("aws configure secret", lambda s: f"aws configure set aws_secret_access_key {s}", lambda: g.s(B64, 40)),
        (
            "aws configure session token",
            lambda s: f"aws configure set aws_session_token {s} --profile prod",
            lambda: g.s(B64, 60),
        ),
        ("docker login -p", lambda s: f"docker login -u acme -p {s} registry.example.com", word),
        ("ldapsearch -w", lambda s: f"ldapsearch -x -D cn=admin,dc=acme -w {s} -b dc=acme", word),
        ("sqlcmd -P", lambda s: f"sqlcmd -S db -U sa -P {s} -Q 'select 1'", pw),
        ("htpasswd -b", lambda s: f"htpasswd -b -c .htpasswd admin {s}", word),
        ("openssl pass:", lambda s: f"openssl pkcs12 -export -in c.pem -passout pass:{s} -out c.p12", word),
        ("keytool -storepass", lambda s: f"keytool -list -keystore app.jks -storepass {s}", word),
        ("smbclient -U", lambda s: f"smbclient //nas/share -U backup%{s}", word),
        ("--token flag", lambda s: f"vercel deploy --prod --token {s}", lambda: g.s(ALNUM, 24)),
        ("--api-key flag", lambda s: f"tool upload --api-key={s} dist/", word),
        ("--client-secret flag", lambda s: f"az login --service-principal -u app --client-secret {s}", word),
        ("netrc one line", lambda s: f"machine api.heroku.com login me@acme.io password {s}", word),
        ("netrc multi line", lambda s: f"machine github.com\n  login octocat\n  password {s}", word),
        ("pgpass", lambda s: f"db.internal:5432:shop:app:{s}", pw),
        (
            "docker auth",
            lambda s: '{"auths": {"registry.example.com": {"auth": "' + s + '"}}}',
            lambda: g.s(B64, 32) + "==",
        ),
        ("npmrc authToken", lambda s: f"//registry.npmjs.org/:_authToken={s}", word),
        ("env password", lambda s: f"DB_PASSWORD={s}", word),
        ("export token", lambda s: f"export API_TOKEN={s}", word),
        ("env pat", lambda s: f"AZURE_DEVOPS_PAT={s}", lambda: g.s(LO + DIG, 52)),
        ("env github pat", lambda s: f"export GH_PAT={s}", word),
        ("env webhook url", lambda s: f"SLACK_WEBHOOK_URL=https://example.com/hook/{s}", word),
        ("env license key", lambda s: f"NEW_RELIC_LICENSE_KEY={s}", lambda: g.s(HEX, 40)),
        ("env generic key", lambda s: f"MAPS_KEY={s}", word),
        ("env secret", lambda s: f"JWT_SECRET={s}", word),
        ("env connection string", lambda s: f"AZURE_CONN_STR='Server=db;User=sa;Password={s}'", word),
        ("env dsn", lambda s: f"SENTRY_DSN=https://{s}@sentry.acme.io/2", lambda: g.s(HEX, 32)),
        ("env credentials", lambda s: f"GOOGLE_CREDENTIALS={s}", word),
        ("env pass", lambda s: f"SMTP_PASS={s}", word),
        (
            "quoted passphrase",
            lambda s: f'PASSPHRASE="{s}"',
            lambda: f"correct horse {g.s(LO, 6)} staple {g.s(DIG, 3)}",
        ),
        ("single quoted passphrase", lambda s: f"passphrase: '{s}'", lambda: f"blue {g.s(LO, 7)} river {g.s(DIG, 2)}"),
        ("yaml password", lambda s: f"  password: {s}", word),
        ("yaml token", lambda s: f"token: {s}", word),
        ("json client secret", lambda s: '{"client_secret": "' + s + '"}', word),
        ("json api key", lambda s: '{"apiKey": "' + s + '"}', word),
        ("python kwarg", lambda s: f'connect(host="db", password="{s}")', word),
        ("python assignment", lambda s: f'API_KEY = "{s}"', word),
        ("js assignment", lambda s: f"const secretKey = '{s}';", word),
        ("toml secret", lambda s: f'secret_key = "{s}"', word),
        ("ini password", lambda s: f"password = {s}", word),
        ("kubectl secret literal", lambda s: f"kubectl create secret generic db --from-literal=password={s}", word),
        ("docker run -e", lambda s: f"docker run -e POSTGRES_PASSWORD={s} postgres:16", word),
        ("PGPASSWORD prefix", lambda s: f"PGPASSWORD={s} psql -h db -U app", word),
        ("header x-api-key", lambda s: f"curl -H 'X-API-Key: {s}' https://api.example.com", word),
        (
            "header private-token",
            lambda s: f'curl --header "PRIVATE-TOKEN: {s}" https://gitlab.example.com/api/v4',
            word,
        ),
        ("query token", lambda s: f"https://api.example.com/v1/items?access_token={s}&page=2", word),
        ("prose password", lambda s: f"the password is {s}", pw),
        ("git credential url", lambda s: f"git remote set-url origin https://bob:{s}@gitlab.com/acme/app.git", word),
    ]
    return [(label, make(secret := gen()), secret) for label, make, gen in forms]


def secret_cases(seed: int = 20260315) -> list[tuple[str, str, str]]:
    """Every token format bare in prose, then every command-line and assignment form."""
    g = _Gen(seed)
    return _token_formats(g) + _forms(g)


def leaked(secret: str, text: str) -> bool:
    """True when the secret, or any 12-character piece of it, shows in `text` (a cut keeps a piece)."""
    if secret in text:
        return True
    core = secret.strip()
    if len(core) <= 12:
        return False
    return any(core[i : i + 12] in text for i in range(0, len(core) - 11, 3))


# Ordinary code and identifiers: redaction must leave (nearly) all of these lines alone.
ORDINARY_LINES = """\
password = input('Password: ')
password = getpass.getpass("Password: ")
PWD=/home/dev/acme
OLDPWD=/home/dev
cd $PWD && make test
token = os.environ["GITHUB_TOKEN"]
api_key = os.getenv("API_KEY")
secret = settings.SECRET_KEY
self.token = token
password_hash = bcrypt.hashpw(password.encode(), bcrypt.gensalt())
if password == confirm_password:
def check_password(password: str) -> bool:
    return hmac.compare_digest(token, expected)
max_tokens = 4096
input_tokens=35, output_tokens=120
tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")
for token in tokens:
    key = row[0]
sort_key = lambda item: item.name
cache_key = f"user:{user_id}"
primary_key=True
foreign_key = ForeignKey("users.id")
secret_name = "prod/db"
token_url = "https://oauth2.googleapis.com/token"
password_reset_url = reverse("password_reset")
auth = HTTPBasicAuth(user, password)
headers = {"Authorization": f"Bearer {token}"}
Bearer authentication is configured in the gateway
the basic functionality works
git@github.com:acme/app.git
http://localhost:3000/path
use scikit-learn (sk-learn) and task-abcdefghijklmnopqrstuvwxyz
sha256 7e0a8bf29779b96672ed41f11597ac59625f2029e95b87ccdf28984feadd11e4
commit 4f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39
GITHUB_TOKEN=$GITHUB_TOKEN
DB_PASSWORD=${DB_PASSWORD}
password: ${{ secrets.DB_PASSWORD }}
token: "{{ vault_token }}"
api_key: <your-api-key>
SECRET_KEY=changeme
export PATH=/usr/local/bin:$PATH
export PYTHONPATH=src
user_id = request.user.id
session_id = uuid.uuid4().hex
is_secret = field.metadata.get("secret", False)
parser.add_argument("--password", help="the database password")
parser.add_argument("--token-file", type=Path)
logger.info("token refreshed for %s", user)
raise ValueError("invalid token")
assert response.status_code == 401
const token = await getToken();
const password = req.body.password;
let apiKey = process.env.API_KEY;
if (!token) throw new Error("missing token");
password: str = Field(min_length=8)
token: Optional[str] = None
secret_key: SecretStr
class TokenBucket:
    def refill(self, tokens: int) -> None:
keyboard = Keyboard(layout="us")
monkeypatch.setenv("API_TOKEN", "test")
SELECT id, name FROM users WHERE email = ?
docker compose up -d postgres redis
pip install -r requirements.txt
pytest -q tests/test_auth.py -k password
git log --oneline -n 20
ssh -i ~/.ssh/id_ed25519 deploy@10.0.0.5
curl -s https://api.github.com/repos/acme/app
mysql -u root -p shop
kubectl get secret db -o yaml
aws s3 cp build.tgz s3://acme-builds/
The tokenizer splits text into tokens before embedding.
Rotate the API key every 90 days; the secret lives in Vault.
See docs/auth.md for how passwords are hashed.
npm install --save-dev typescript@5.4.5
version = "1.2.3"
timeout = 30
UUID 123e4567-e89b-12d3-a456-426614174000
EXAMPLE_PASSWORD = None
    auth: AuthTypes | None = None,
    auth: _t.AuthType = None,
def _build_auth(self, auth: AuthTypes | None) -> Auth | None:
        auth = (url.username, url.password)
        token = b64encode(userpass).decode()
noncebit = f"{nonce}:{ncvalue}:{cnonce}:auth:{HA2}"
auth_str = f", auth={auth!r}" if auth else ""
:param auth: (optional) Auth tuple or callable to enable Basic/Digest/Custom HTTP Auth.
The indexer skips a file for this pass: the next pass reads it again.
token: Token = Depends(oauth2_scheme)
"""
