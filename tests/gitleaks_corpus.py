"""A corpus of secrets with a generator per rule of gitleaks' default rule set, placed where transcripts hold text.

The reference is gitleaks' `config/gitleaks.toml` (github.com/gitleaks/gitleaks): each rule below has a
generator written from that rule's regex (its prefix, alphabet and length; for rules that match by context,
the provider's name given to a value). Nothing is copied from it: every secret is random characters drawn at
run time from the rule's alphabet, and prefixes are joined at run time so no line here looks like a live key.
The rules matched by file path only (PKCS#12 files) have no text to generate and are left out.

`CONTEXT_CASES` add secrets in the forms people paste them (a key block on one line, `auth=(user, pass)`,
`.netrc`, NuGet's `ClearTextPassword`, kubeconfig `client-key-data`, "the password is: ...", `sudo -S`).

    samples()                     -> [Sample(rule, text, secret)], one or more per rule
    placements(samples)           -> every sample in each of the six PLACES, in each of the three ENCODINGS
    exposed(secret, text)         -> does the secret (or a 12-character piece) show, plain, URL- or JSON-decoded

A sample's `text` is the line a person or a tool would write; `secret` is the part that must never show.
"""

from __future__ import annotations

import base64
import json
import random
import string
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass

UP = string.ascii_uppercase
LO = string.ascii_lowercase
DIG = string.digits
HEX = "0123456789abcdef"
ALNUM = UP + LO + DIG
LODIG = LO + DIG
UPDIG = UP + DIG
URLSAFE = ALNUM + "_-"
LOURL = LODIG + "_-"
B64 = ALNUM + "+/"

PLACES = ("user message", "command", "tool output", "assistant text", "file written", "edit")
ENCODINGS = ("plain", "json-escaped", "url-encoded")


def _j(*parts: str) -> str:
    return "".join(parts)


@dataclass(frozen=True)
class Sample:
    rule: str  # gitleaks rule id, or "context:<what>" for CONTEXT_CASES
    text: str
    secret: str


class Gen:
    """Random parts: deterministic for a seed; a part of 8 or more characters mixes digits and letters when
    its alphabet has both, as random keys of those lengths practically always do."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def s(self, alphabet: str, n: int) -> str:
        out = "".join(self.rng.choice(alphabet) for _ in range(n))
        if n >= 8 and not any(c.isdigit() for c in out) and any(c.isdigit() for c in alphabet):
            out = out[:-1] + self.rng.choice([c for c in alphabet if c.isdigit()])
        if n >= 8 and not any(c.isalpha() for c in out) and any(c.isalpha() for c in alphabet):
            out = self.rng.choice([c for c in alphabet if c.isalpha()]) + out[1:]
        return out

    def uuid(self, upper: bool = False) -> str:
        h = HEX.upper() if upper else HEX
        return "-".join(self.s(h, n) for n in (8, 4, 4, 4, 12))

    def pick(self, options: list[str]) -> str:
        return self.rng.choice(options)


# -- the rules ------------------------------------------------------------------------------------------------
# A token rule: the secret has a shape of its own (a prefix, a fixed alphabet and length).
# T(prefix, alphabet, n, suffix): the token is prefix + random + suffix; the random part is the secret.
# A keyword rule: gitleaks finds the value beside the provider's name. K(alphabet, n, prefix, suffix) gives the
# value; the name comes from the rule id (`adafruit-api-key` -> ADAFRUIT_API_KEY, adafruitApiKey, ...).

Make = Callable[[Gen], tuple[str, str]]  # -> (token or value, secret part)


def T(prefix: str, alphabet: str, n: int, suffix: str = "") -> tuple[str, Make]:  # noqa: N802
    def make(g: Gen) -> tuple[str, str]:
        r = g.s(alphabet, n)
        return prefix + r + suffix, r

    return "token", make


def K(alphabet: str, n: int, prefix: str = "", suffix: str = "") -> tuple[str, Make]:  # noqa: N802
    def make(g: Gen) -> tuple[str, str]:
        r = g.s(alphabet, n)
        return prefix + r + suffix, r

    return "keyword", make


def F(kind: str, make: Make) -> tuple[str, Make]:  # noqa: N802
    """A rule whose secret is built by `make` (several parts)."""
    return kind, make


def _both(value: str) -> tuple[str, str]:
    return value, value


def _jwt(g: Gen) -> tuple[str, str]:
    header = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').decode().rstrip("=")
    claims = json.dumps({"sub": g.s(DIG, 10), "name": g.s(LO, 8), "iat": int(g.s(DIG, 10))}).encode()
    payload = base64.urlsafe_b64encode(claims).decode().rstrip("=")
    sig = g.s(URLSAFE, 43)
    return f"{header}.{payload}.{sig}", sig


def _pem(g: Gen, kind: str = "RSA ") -> tuple[str, str]:
    body = [g.s(B64, 64) for _ in range(6)] + [g.s(B64, 40) + "=="]
    begin, end = _j("-----BEGIN ", kind, "PRIVATE", " KEY-----"), _j("-----END ", kind, "PRIVATE", " KEY-----")
    return begin + "\n" + "\n".join(body) + "\n" + end, body[2]


RULES: dict[str, list[tuple[str, Make]]] = {
    "1password-secret-key": [
        F(
            "token",
            lambda g: _both(_j("A", "3-") + "-".join([g.s(UPDIG, 6), g.s(UPDIG, 11)] + [g.s(UPDIG, 5) for _ in "123"])),
        )
    ],
    "1password-service-account-token": [T(_j("ops", "_eyJ"), B64, 250)],
    "adafruit-api-key": [K(LOURL, 32)],
    "adobe-client-id": [K(HEX, 32)],
    "adobe-client-secret": [T(_j("p8", "e-"), ALNUM, 32)],
    "age-secret-key": [T(_j("AGE-SECRET", "-KEY-1"), "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58)],
    "airtable-api-key": [K(LODIG, 17)],
    "algolia-api-key": [K(LODIG, 32)],
    "alibaba-access-key-id": [T(_j("LT", "AI"), LODIG, 20)],
    "alibaba-secret-key": [K(LODIG, 30)],
    "anthropic-admin-api-key": [T(_j("sk-ant", "-admin01-"), URLSAFE, 93, "AA")],
    "anthropic-api-key": [T(_j("sk-ant", "-api03-"), URLSAFE, 93, "AA")],
    "artifactory-api-key": [T(_j("AK", "Cp"), ALNUM, 69)],
    "artifactory-reference-token": [T(_j("cmV", "md"), ALNUM, 59)],
    "asana-client-id": [K(DIG, 16)],
    "asana-client-secret": [K(LODIG, 32)],
    "atlassian-api-token": [T(_j("ATA", "TT3"), URLSAFE + "=", 186), K(LODIG, 20, suffix="a1b2")],
    "authress-service-client-access-key": [
        F(
            "token",
            lambda g: (lambda r: (_j("authress", "_") + g.s(LODIG, 20) + "." + g.s(LODIG, 5) + ".acc_" + r, r))(
                g.s(LODIG, 20) + "." + g.s(URLSAFE, 60)
            ),
        )
    ],
    "aws-access-token": [T(_j("AK", "IA"), UP + "234567", 16)],
    "azure-ad-client-secret": [
        F("token", lambda g: (lambda r: (g.s(ALNUM, 3) + "8Q~" + r, r))(g.s(ALNUM + "_~.-", 34)))
    ],
    "beamer-api-token": [K(LOURL + "=", 44, prefix="b_")],
    "bitbucket-client-id": [K(LODIG, 32)],
    "bitbucket-client-secret": [K(LOURL + "=", 64)],
    "bittrex-access-key": [K(LODIG, 32)],
    "bittrex-secret-key": [K(LODIG, 32)],
    "cisco-meraki-api-key": [K(HEX, 40)],
    "clickhouse-cloud-api-secret-key": [T(_j("4b", "1d"), ALNUM, 38)],
    "clojars-api-token": [T(_j("CLOJ", "ARS_"), LODIG, 60)],
    "cloudflare-api-key": [K(LOURL, 40)],
    "cloudflare-global-api-key": [K(HEX, 37)],
    "cloudflare-origin-ca-key": [
        F("token", lambda g: (lambda r: ("v1.0-" + g.s(HEX, 24) + "-" + r, r))(g.s(HEX, 146)))
    ],
    "codecov-access-token": [K(LODIG, 32)],
    "cohere-api-token": [K(ALNUM, 40)],
    "coinbase-access-token": [K(LOURL, 64)],
    "confluent-access-token": [K(LODIG, 16)],
    "confluent-secret-key": [K(LODIG, 64)],
    "contentful-delivery-api-token": [K(LOURL + "=", 43)],
    "curl-auth-header": [
        F(
            "line",
            lambda g: (lambda r: (f'curl -H "Authorization: Bearer {r}" https://api.example.com/v2/jobs', r))(
                g.s(URLSAFE + ".", 40)
            ),
        ),
        F("line", lambda g: (lambda r: (f"curl --header 'X-Api-Key: {r}' https://api.example.com", r))(g.s(ALNUM, 32))),
    ],
    "curl-auth-user": [
        F(
            "line",
            lambda g: (lambda r: (f"curl -u admin:{r} https://ci.example.com/job/build", r))(g.s(ALNUM + "@.-", 18)),
        )
    ],
    "database-password": [K(ALNUM + ":;<@=},!$?^", 18)],
    "databricks-api-token": [T(_j("da", "pi"), HEX, 32)],
    "datadog-access-token": [K(LODIG, 40)],
    "defined-networking-api-token": [
        F("keyword", lambda g: (lambda r: (_j("dn", "key-") + g.s(LOURL + "=", 26) + "-" + r, r))(g.s(LOURL + "=", 52)))
    ],
    "digitalocean-access-token": [T(_j("doo", "_v1_"), HEX, 64)],
    "digitalocean-pat": [T(_j("dop", "_v1_"), HEX, 64)],
    "digitalocean-refresh-token": [T(_j("dor", "_v1_"), HEX, 64)],
    "discord-api-token": [K(HEX, 64)],
    "discord-client-id": [K(DIG, 18)],
    "discord-client-secret": [K(LOURL + "=", 32)],
    "doppler-api-token": [T(_j("dp.", "pt."), ALNUM, 43)],
    "droneci-access-token": [K(LODIG, 32)],
    "dropbox-api-token": [K(LODIG, 15)],
    "dropbox-long-lived-api-token": [
        F("keyword", lambda g: (lambda r: (g.s(LODIG, 11) + "A" * 10 + r, r))(g.s(LOURL + "=", 43)))
    ],
    "dropbox-short-lived-api-token": [K(LOURL + "=", 135, prefix=_j("s", "l."))],
    "duffel-api-token": [T(_j("duffel", "_test_"), LOURL + "=", 43)],
    "dynatrace-api-token": [
        F("token", lambda g: (lambda r: (_j("dt0", "c01.") + g.s(ALNUM, 24) + "." + r, r))(g.s(ALNUM, 64)))
    ],
    "easypost-api-token": [T(_j("EZ", "AK"), ALNUM, 54)],
    "easypost-test-api-token": [T(_j("EZ", "TK"), ALNUM, 54)],
    "etsy-access-token": [K(LODIG, 24)],
    "facebook-access-token": [F("token", lambda g: (lambda r: (g.s(DIG, 15) + "|" + r, r))(g.s(LOURL, 32)))],
    "facebook-page-access-token": [T(_j("EA", "AM"), ALNUM, 120)],
    "facebook-secret": [K(HEX, 32)],
    "fastly-api-token": [K(LOURL + "=", 32)],
    "finicity-api-token": [K(HEX, 32)],
    "finicity-client-secret": [K(LODIG, 20)],
    "finnhub-access-token": [K(LODIG, 20)],
    "flickr-access-token": [K(LODIG, 32)],
    "flutterwave-encryption-key": [T(_j("FLWSECK", "_TEST-"), "abcdefgh" + DIG, 12)],
    "flutterwave-public-key": [T(_j("FLWPUBK", "_TEST-"), "abcdefgh" + DIG, 32, "-X")],
    "flutterwave-secret-key": [T(_j("FLWSECK", "_TEST-"), "abcdefgh" + DIG, 32, "-X")],
    "flyio-access-token": [T(_j("fo", "1_"), URLSAFE, 43), T(_j("fm", "2_"), B64, 120)],
    "frameio-api-token": [T(_j("fio", "-u-"), LOURL + "=", 64)],
    "freemius-secret-key": [
        F("line", lambda g: (lambda r: (f"'secret_key' => '{_j('s', 'k_')}{r}',", r))(g.s(ALNUM + "!#%&*+", 29)))
    ],
    "freshbooks-access-token": [K(LODIG, 64)],
    "gcp-api-key": [T(_j("AI", "za"), URLSAFE, 35)],
    "generic-api-key": [K(URLSAFE + ".", 32), K(LODIG + "+/", 40)],
    "github-app-token": [T(_j("gh", "u_"), ALNUM, 36), T(_j("gh", "s_"), ALNUM, 36)],
    "github-fine-grained-pat": [T(_j("github", "_pat_"), ALNUM + "_", 82)],
    "github-oauth": [T(_j("gh", "o_"), ALNUM, 36)],
    "github-pat": [T(_j("gh", "p_"), ALNUM, 36)],
    "github-refresh-token": [T(_j("gh", "r_"), ALNUM, 36)],
    "gitlab-cicd-job-token": [
        F("token", lambda g: (lambda r: (_j("glc", "bt-") + g.s(ALNUM, 3) + "_" + r, r))(g.s(URLSAFE, 20)))
    ],
    "gitlab-deploy-token": [T(_j("gl", "dt-"), URLSAFE, 20)],
    "gitlab-feature-flag-client-token": [T(_j("glff", "ct-"), URLSAFE, 20)],
    "gitlab-feed-token": [T(_j("gl", "ft-"), URLSAFE, 20)],
    "gitlab-incoming-mail-token": [T(_j("gli", "mt-"), URLSAFE, 25)],
    "gitlab-kubernetes-agent-token": [T(_j("glag", "ent-"), URLSAFE, 50)],
    "gitlab-oauth-app-secret": [T(_j("glo", "as-"), URLSAFE, 64)],
    "gitlab-pat": [T(_j("gl", "pat-"), URLSAFE, 20)],
    "gitlab-pat-routable": [
        F("token", lambda g: (lambda r: (_j("gl", "pat-") + r + "." + g.s(LODIG, 9), r))(g.s(URLSAFE, 40)))
    ],
    "gitlab-ptt": [T(_j("gl", "ptt-"), HEX, 40)],
    "gitlab-rrt": [T(_j("GR13", "48941"), URLSAFE, 20)],
    "gitlab-runner-authentication-token": [T(_j("gl", "rt-"), URLSAFE, 20)],
    "gitlab-runner-authentication-token-routable": [
        F("token", lambda g: (lambda r: (_j("gl", "rt-t1_") + r + "." + g.s(LODIG, 9), r))(g.s(URLSAFE, 40)))
    ],
    "gitlab-scim-token": [T(_j("glso", "at-"), URLSAFE, 20)],
    "gitlab-session-cookie": [T(_j("_gitlab", "_session="), LODIG, 32)],
    "gitter-access-token": [K(LOURL, 40)],
    "gocardless-api-token": [K(LOURL + "=", 40, prefix=_j("li", "ve_"))],
    "grafana-api-key": [T(_j("eyJr", "Ijoi"), ALNUM, 72)],
    "grafana-cloud-api-token": [T(_j("gl", "c_"), ALNUM + "+/", 40)],
    "grafana-service-account-token": [
        F("token", lambda g: (lambda r: (_j("gl", "sa_") + r + "_" + g.s(HEX, 8), r))(g.s(ALNUM, 32)))
    ],
    "harness-api-key": [
        F(
            "token",
            lambda g: (lambda r: (_j("pa", "t.") + g.s(URLSAFE, 22) + "." + r + "." + g.s(ALNUM, 20), r))(
                g.s(ALNUM, 24)
            ),
        )
    ],
    "hashicorp-tf-api-token": [
        F("token", lambda g: (lambda r: (g.s(LODIG, 14) + _j(".atlas", "v1.") + r, r))(g.s(LOURL + "=", 65)))
    ],
    "hashicorp-tf-password": [K(LOURL + "=", 16)],
    "heroku-api-key": [F("keyword", lambda g: _both(g.uuid()))],
    "heroku-api-key-v2": [T(_j("HRKU", "-AA"), URLSAFE, 58)],
    "hubspot-api-key": [F("keyword", lambda g: _both(g.uuid(upper=True)))],
    "huggingface-access-token": [T(_j("h", "f_"), UP + LO, 34)],
    "huggingface-organization-api-token": [T(_j("api", "_org_"), UP + LO, 34)],
    "infracost-api-token": [T(_j("ic", "o-"), ALNUM, 32)],
    "intercom-api-key": [K(LOURL + "=", 60)],
    "intra42-client-secret": [T(_j("s-s4t2", "ud-"), HEX, 64)],
    "jfrog-api-key": [K(LODIG, 73)],
    "jfrog-identity-token": [K(LODIG, 64)],
    "jwt": [F("token", _jwt)],
    "jwt-base64": [F("token", lambda g: (lambda t: (base64.b64encode(t[0].encode()).decode(), t[0][-20:]))(_jwt(g)))],
    "kraken-access-token": [K(LODIG + "/=_+-", 86)],
    "kubernetes-secret-yaml": [
        F(
            "line",
            lambda g: (
                lambda r: (f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: db-creds\ndata:\n  password: {r}\n", r)
            )(base64.b64encode(g.s(ALNUM, 18).encode()).decode()),
        )
    ],
    "kucoin-access-token": [K(HEX, 24)],
    "kucoin-secret-key": [F("keyword", lambda g: _both(g.uuid()))],
    "launchdarkly-access-token": [K(LOURL + "=", 40)],
    "linear-api-key": [T(_j("lin", "_api_"), ALNUM, 40)],
    "linear-client-secret": [K(HEX, 32)],
    "linkedin-client-id": [K(LODIG, 14)],
    "linkedin-client-secret": [K(LODIG, 16)],
    "lob-api-key": [K(HEX, 35, prefix=_j("li", "ve_"))],
    "lob-pub-api-key": [K(HEX, 31, prefix=_j("test", "_pub_"))],
    "mailchimp-api-key": [K(HEX, 32, suffix="-us12")],
    "mailgun-private-api-token": [K(HEX, 32, prefix=_j("ke", "y-"))],
    "mailgun-pub-key": [K(HEX, 32, prefix=_j("pub", "key-"))],
    "mailgun-signing-key": [
        F(
            "keyword",
            lambda g: _both(
                g.s("abcdefgh" + DIG, 32) + "-" + g.s("abcdefgh" + DIG, 8) + "-" + g.s("abcdefgh" + DIG, 8)
            ),
        )
    ],
    "mapbox-api-token": [
        F("keyword", lambda g: (lambda r: (_j("p", "k.") + r + "." + g.s(LODIG, 22), r))(g.s(LODIG, 60)))
    ],
    "mattermost-access-token": [K(LODIG, 26)],
    "maxmind-license-key": [
        F("token", lambda g: (lambda r: (g.s(ALNUM, 6) + "_" + r + _j("_m", "mk"), r))(g.s(ALNUM, 29)))
    ],
    "messagebird-api-token": [K(LODIG, 25)],
    "messagebird-client-id": [F("keyword", lambda g: _both(g.uuid()))],
    "microsoft-teams-webhook": [
        F(
            "token",
            lambda g: (
                lambda r: (
                    _j("https://acme.webhook", ".office.com/webhookb2/")
                    + g.uuid()
                    + "@"
                    + g.uuid()
                    + "/IncomingWebhook/"
                    + r
                    + "/"
                    + g.uuid(),
                    r,
                )
            )(g.s(LODIG, 32)),
        )
    ],
    "netlify-access-token": [K(LOURL + "=", 40)],
    "new-relic-browser-api-token": [K(HEX, 19, prefix=_j("NR", "JS-"))],
    "new-relic-insert-key": [K(LODIG + "-", 32, prefix=_j("NR", "II-"))],
    "new-relic-user-api-id": [K(LODIG, 64)],
    "new-relic-user-api-key": [K(LODIG, 27, prefix=_j("NR", "AK-"))],
    "notion-api-token": [F("token", lambda g: (lambda r: (_j("nt", "n_") + g.s(DIG, 11) + r, r))(g.s(ALNUM, 35)))],
    "npm-access-token": [T(_j("np", "m_"), ALNUM, 36)],
    "nuget-config-password": [
        F("line", lambda g: (lambda r: (f'<add key="ClearTextPassword" value="{r}" />', r))(g.s(ALNUM + "!#%&", 16)))
    ],
    "nytimes-access-token": [K(LOURL + "=", 32)],
    "octopus-deploy-api-key": [T(_j("AP", "I-"), UPDIG, 26)],
    "okta-access-token": [K(URLSAFE + "=", 40, prefix="00")],
    "openai-api-key": [
        F(
            "token",
            lambda g: (lambda r: (_j("sk-", "proj-") + r + _j("T3Blbk", "FJ") + g.s(URLSAFE, 74), r))(g.s(URLSAFE, 74)),
        ),
        F("token", lambda g: (lambda r: (_j("s", "k-") + r + _j("T3Blbk", "FJ") + g.s(ALNUM, 20), r))(g.s(ALNUM, 20))),
    ],
    "openshift-user-token": [T(_j("sha256", "~"), URLSAFE, 43)],
    "perplexity-api-key": [T(_j("pp", "lx-"), ALNUM, 48)],
    "plaid-api-token": [F("keyword", lambda g: (lambda r: ("access-sandbox-" + r, r))(g.uuid()))],
    "plaid-client-id": [K(LODIG, 24)],
    "plaid-secret-key": [K(LODIG, 30)],
    "planetscale-api-token": [T(_j("pscale", "_tkn_"), URLSAFE + "=.", 43)],
    "planetscale-oauth-token": [T(_j("pscale", "_oauth_"), URLSAFE + "=.", 43)],
    "planetscale-password": [T(_j("pscale", "_pw_"), URLSAFE + "=.", 43)],
    "postman-api-token": [
        F("token", lambda g: (lambda r: (_j("PM", "AK-") + g.s(HEX, 24) + "-" + r, r))(g.s(HEX, 34)))
    ],
    "prefect-api-token": [T(_j("pn", "u_"), ALNUM, 36)],
    "private-key": [F("line", _pem), F("line", lambda g: _pem(g, "EC ")), F("line", lambda g: _pem(g, ""))],
    "privateai-api-token": [K(LODIG, 32)],
    "pulumi-api-token": [T(_j("pu", "l-"), HEX, 40)],
    "pypi-upload-token": [T(_j("pypi-", "AgEIcHlwaS5vcmc"), URLSAFE, 70)],
    "rapidapi-access-token": [K(LOURL, 50)],
    "readme-api-token": [T(_j("rd", "me_"), LODIG, 70)],
    "rubygems-api-token": [T(_j("ruby", "gems_"), HEX, 48)],
    "scalingo-api-token": [T(_j("tk-", "us-"), URLSAFE, 48)],
    "sendbird-access-id": [F("keyword", lambda g: _both(g.uuid()))],
    "sendbird-access-token": [K(HEX, 40)],
    "sendgrid-api-token": [
        F("token", lambda g: (lambda r: (_j("S", "G.") + g.s(URLSAFE, 22) + "." + r, r))(g.s(URLSAFE, 43)))
    ],
    "sendinblue-api-token": [
        F("token", lambda g: (lambda r: (_j("xkey", "sib-") + r + "-" + g.s(ALNUM, 16), r))(g.s(HEX, 64)))
    ],
    "sentry-access-token": [K(HEX, 64)],
    "sentry-org-token": [
        F(
            "token",
            lambda g: (
                lambda r: (_j("sntrys_", "eyJpYXQiO") + g.s(B64, 30) + "LCJyZWdpb25fdXJs" + g.s(B64, 30) + "_" + r, r)
            )(g.s(B64, 43)),
        )
    ],
    "sentry-user-token": [T(_j("sntr", "yu_"), HEX, 64)],
    "settlemint-application-access-token": [T(_j("sm", "_aat_"), ALNUM, 16)],
    "settlemint-personal-access-token": [T(_j("sm", "_pat_"), ALNUM, 16)],
    "settlemint-service-access-token": [T(_j("sm", "_sat_"), ALNUM, 16)],
    "shippo-api-token": [T(_j("shippo", "_live_"), HEX, 40)],
    "shopify-access-token": [T(_j("shp", "at_"), HEX, 32)],
    "shopify-custom-access-token": [T(_j("shp", "ca_"), HEX, 32)],
    "shopify-private-app-access-token": [T(_j("shp", "pa_"), HEX, 32)],
    "shopify-shared-secret": [T(_j("shp", "ss_"), HEX, 32)],
    "sidekiq-secret": [
        F("line", lambda g: (lambda r: (f"BUNDLE_ENTERPRISE__CONTRIBSYS__COM={r}", r))(g.s(HEX, 8) + ":" + g.s(HEX, 8)))
    ],
    "sidekiq-sensitive-url": [
        F("token", lambda g: (lambda r: (f"https://{r}@gems.contribsys.com/", r))(g.s(HEX, 8) + ":" + g.s(HEX, 8)))
    ],
    "slack-app-token": [
        F(
            "token",
            lambda g: (lambda r: (_j("xa", "pp-1-A") + g.s(UPDIG, 10) + "-" + g.s(DIG, 13) + "-" + r, r))(
                g.s(LODIG, 64)
            ),
        )
    ],
    "slack-bot-token": [
        F(
            "token",
            lambda g: (lambda r: (_j("xo", "xb-") + g.s(DIG, 12) + "-" + g.s(DIG, 13) + "-" + r, r))(g.s(ALNUM, 24)),
        )
    ],
    "slack-config-access-token": [T(_j("xoxe.", "xoxp-1-"), UPDIG, 164)],
    "slack-config-refresh-token": [T(_j("xo", "xe-1-"), UPDIG, 146)],
    "slack-legacy-bot-token": [
        F("token", lambda g: (lambda r: (_j("xo", "xb-") + g.s(DIG, 10) + "-" + r, r))(g.s(ALNUM, 24)))
    ],
    "slack-legacy-token": [
        F(
            "token",
            lambda g: (lambda r: (_j("xo", "xs-") + "-".join(g.s(DIG, 9) for _ in range(3)) + "-" + r, r))(
                g.s(HEX, 64)
            ),
        )
    ],
    "slack-legacy-workspace-token": [T(_j("xo", "xr-"), ALNUM, 40)],
    "slack-user-token": [
        F(
            "token",
            lambda g: (lambda r: (_j("xo", "xp-") + "-".join(g.s(DIG, 12) for _ in range(3)) + "-" + r, r))(
                g.s(ALNUM, 32)
            ),
        )
    ],
    "slack-webhook-url": [T(_j("https://hooks", ".slack.com/services/"), ALNUM + "+/", 44)],
    "snyk-api-token": [F("keyword", lambda g: _both(g.uuid()))],
    "sonar-api-token": [K(LOURL + "=", 40)],
    "sourcegraph-access-token": [
        F("token", lambda g: (lambda r: (_j("sg", "p_") + g.s(HEX, 16) + "_" + r, r))(g.s(HEX, 40)))
    ],
    "square-access-token": [T(_j("EA", "AA"), URLSAFE, 60), T(_j("sq0", "atp-"), URLSAFE, 22)],
    "squarespace-access-token": [F("keyword", lambda g: _both(g.uuid()))],
    "stripe-access-token": [T(_j("sk", "_live_"), ALNUM, 48), T(_j("rk", "_test_"), ALNUM, 24)],
    "sumologic-access-id": [K(ALNUM, 12, prefix="su")],
    "sumologic-access-token": [K(LODIG, 64)],
    "telegram-bot-api-token": [F("keyword", lambda g: (lambda r: (g.s(DIG, 10) + ":A" + r, r))(g.s(LOURL, 34)))],
    "travisci-access-token": [K(LODIG, 22)],
    "twilio-api-key": [T(_j("S", "K"), HEX, 32)],
    "twitch-api-token": [K(LODIG, 30)],
    "twitter-access-secret": [K(LODIG, 45)],
    "twitter-access-token": [F("keyword", lambda g: (lambda r: (g.s(DIG, 18) + "-" + r, r))(g.s(ALNUM, 40)))],
    "twitter-api-key": [K(LODIG, 25)],
    "twitter-api-secret": [K(LODIG, 50)],
    "twitter-bearer-token": [K(ALNUM + "%", 90, prefix="A" * 22)],
    "typeform-api-token": [K(LOURL + ".=", 59, prefix=_j("tf", "p_"))],
    "vault-batch-token": [T(_j("hv", "b."), URLSAFE, 140)],
    "vault-service-token": [T(_j("hv", "s."), URLSAFE, 95)],
    "yandex-access-token": [
        F("keyword", lambda g: (lambda r: (_j("t", "1.") + g.s(URLSAFE, 20) + "." + r, r))(g.s(URLSAFE, 86)))
    ],
    "yandex-api-key": [K(URLSAFE, 36, prefix=_j("AQ", "VN"))],
    "yandex-aws-access-token": [K(URLSAFE, 38, prefix="YC")],
    "zendesk-secret-key": [K(LODIG, 40)],
}


# -- how a rule's sample is written -------------------------------------------------------------------------


def _names(rule: str) -> dict[str, str]:
    words = rule.replace("new-relic", "newrelic").split("-")
    camel = words[0] + "".join(w.capitalize() for w in words[1:])
    return {
        "UPPER": "_".join(words).upper(),
        "snake": "_".join(words),
        "camel": camel,
        "Pascal": camel[:1].upper() + camel[1:],
        "kebab": "-".join(words),
        "dotted": ".".join(words),
    }


# Assignment syntaxes: a name and a value, the way configs, code and shells write them.
SYNTAXES: tuple[str, ...] = (
    "export {UPPER}={v}",
    '{snake}: "{v}"',
    '{{"{camel}": "{v}", "region": "eu-west-1"}}',
    '{snake} = "{v}"',
    "const {camel} = '{v}';",
    '{camel} := "{v}"',
    ":{snake} => '{v}',",
    "'{snake}' => \"{v}\",",
    '<add key="{Pascal}" value="{v}" />',
    "{dotted}={v}",
    "deploy --{kebab} {v} --region eu",
    "docker run -e {UPPER}={v} app:latest",
    '- name: {UPPER}\n  value: "{v}"',
    "{UPPER}: {v}",
    '$env:{UPPER} = "{v}"',
    "set {UPPER}={v}",
    "<{camel}>{v}</{camel}>",
    '{camel}: "{v}",',
    "{UPPER}='{v}'",
    '{snake} = "{v}"  # rotated last week',
)
# Where a token with a shape of its own turns up with nothing naming it.
BARE: tuple[str, ...] = (
    "I pasted {v} into the CI settings, is that the right place?",
    "the build log printed {v} right before it failed",
    "({v})",
    "`{v}`",
    '{{"items": [{{"value": "{v}"}}]}}',
    "{v}",
)


def _written(kind: str, value: str, rule: str, n: int) -> str:
    """The sample as written: rule n in syntax n (a seed shifts n, so another seed pairs rules and syntaxes
    differently)."""
    if kind == "line":
        return value
    if kind == "token" and n % 2 == 1:
        return BARE[(n // 2) % len(BARE)].format(v=value)
    return SYNTAXES[n % len(SYNTAXES)].format(v=value, **_names(rule))


# -- secrets in the forms people paste them ---------------------------------------------------------------


def _context_cases(g: Gen) -> list[tuple[str, str, str]]:
    """(what, text, secret) for the forms that a shape or a plain name alone does not catch."""
    pw = g.s(ALNUM, 12) + g.pick(["!", "#", "%", "&"]) + g.s(DIG, 2)
    b64_user = base64.b64encode(f"deploy:{pw}".encode()).decode()
    pem, pem_secret = _pem(g)
    putty_secret = g.s(B64, 64)
    docker_auth = base64.b64encode(f"bot:{g.s(ALNUM, 24)}".encode()).decode()
    dockerconfig = base64.b64encode(json.dumps({"auths": {"ghcr.io": {"auth": docker_auth}}}).encode()).decode()
    client_key = base64.b64encode(pem.encode()).decode()
    rails = g.s(HEX, 128)
    word = g.s(ALNUM, 20)
    telegram = g.s(DIG, 10) + ":AA" + g.s(URLSAFE, 33)
    twilio = g.s(HEX, 32)
    cases = [
        ("pem on one line", pem.replace("\n", " "), pem_secret),
        ("pem with escaped newlines", pem.replace("\n", "\\n"), pem_secret),
        ("authorization basic", f"Authorization: Basic {b64_user}", b64_user),
        ("jwt in a cookie", "Cookie: session=" + _jwt(g)[0], ""),
        ("telegram in a url", f"curl https://api.telegram.org/bot{telegram}/sendMessage", telegram.split(":")[1]),
        ("twilio auth token", f"TWILIO_AUTH_TOKEN={twilio}", twilio),
        ("twilio client", f'client = Client("AC{g.s(HEX, 32)}", "{twilio}")', twilio),
        ("rails secret_key_base", f"secret_key_base: {rails}", rails),
        ("terraform variable", f'variable "db_password" {{\n  default = "{pw}"\n}}', pw),
        ("tfvars", f'admin_password = "{pw}"', pw),
        ("secret in backticks", f"use `{word}` as the API key for staging", word),
        ("kubeconfig client-key-data", f"    client-key-data: {client_key}", client_key[40:80]),
        ("netrc", f"machine api.github.com login octocat password {pw}", pw),
        ("nuget", f'<add key="ClearTextPassword" value="{pw}" />', pw),
        ("ruby hash rocket", f':password => "{pw}"', pw),
        ("python auth tuple", f'requests.get(url, auth=("admin", "{pw}"))', pw),
        (
            "putty key",
            "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: deploy\nPublic-Lines: 2\n"
            f"AAAAC3NzaC1lZDI1NTE5AAAAI{g.s(B64, 43)}\nPrivate-Lines: 1\n{putty_secret}\nPrivate-MAC: {g.s(HEX, 64)}",
            putty_secret,
        ),
        ("prose key is", f"The staging signing key is {word} and expires in May", word),
        ("client id", f"GOOGLE_CLIENT_ID={g.s(DIG, 12)}-{g.s(LODIG, 32)}.apps.googleusercontent.com", ""),
        ("client id json", f'{{"client_id": "{word}", "scope": "read"}}', word),
        ("base64-wrapped key", f"echo {client_key} | base64 -d > id_rsa", client_key[40:80]),
        ("dockerconfigjson", f'  .dockerconfigjson: "{dockerconfig}"', dockerconfig[12:60]),
        ("password is colon", f"the password is: {pw}", pw),
        ("az login", f"az login -u ops@acme.io -p {pw}", pw),
        ("htpasswd -nb", f"htpasswd -nb admin {pw} >> .htpasswd", pw),
        ("sudo -S", f"echo '{pw}' | sudo -S systemctl restart nginx", pw),
        ("sudo here-string", f"sudo -S apt-get update <<< {pw}", pw),
        ("docker password-stdin", f'echo "{word}" | docker login ghcr.io -u bot --password-stdin', word),
        ("glued json newline", json.dumps({"log": "token:\n" + _j("gh", "p_") + word + "AbCdEfGhIjKlMnOp"})[9:], word),
        ("url-encoded glued", "next=%22" + _j("gh", "p_") + word + "AbCdEfGhIjKlMnOp%22", word),
        ("dsn", f"SENTRY_DSN=https://{g.s(HEX, 32)}@o1.ingest.sentry.io/42", ""),
        ("env in compose", f"      - POSTGRES_PASSWORD={pw}", pw),
        ("powershell securestring", f'$pw = ConvertTo-SecureString "{pw}" -AsPlainText -Force', pw),
        ("java properties", f"spring.datasource.password={pw}", pw),
        ("connection string", f"Server=db;Database=shop;User Id=sa;Password={pw};", pw),
        ("mongodb uri", f"mongodb+srv://app:{pw}@cluster0.mongodb.net/shop", pw),
    ]
    return [(w, t, s or _hidden_part(t)) for w, t, s in cases]


def _hidden_part(text: str) -> str:
    """For cases whose whole token is the secret: its longest word."""
    return max(text.replace("=", " ").replace("/", " ").replace(".", " ").split(), key=len)


def samples(seed: int = 20261125) -> list[Sample]:
    """Every rule's samples (each written in one of the syntaxes, in turn), then the context cases."""
    g = Gen(seed)
    out: list[Sample] = []
    n = seed % 997
    for rule, makers in sorted(RULES.items()):
        for kind, make in makers:
            value, secret = make(g)
            out.append(Sample(rule, _written(kind, value, rule, n), secret))
            n += 1
    for what, text, secret in _context_cases(g):
        out.append(Sample(f"context:{what}", text, secret))
    return out


# -- where a transcript holds text, and how it is encoded there --------------------------------------------


def encode(text: str, encoding: str) -> str:
    """The sample as it shows inside another text: as is, inside a JSON string (with a line break and a tab
    glued to it), or URL-encoded in a query string."""
    if encoding == "plain":
        return text
    if encoding == "json-escaped":
        return "config: " + json.dumps({"settings": "line one\n" + text + "\tend"})
    return "GET /callback?state=" + urllib.parse.quote("\n" + text + "\n", safe="") + "&page=2"


def placements(items: list[Sample]) -> list[tuple[Sample, str, str, str]]:
    """(sample, place, encoding, text) for every sample in every place and encoding."""
    return [(s, place, enc, encode(s.text, enc)) for s in items for place in PLACES for enc in ENCODINGS]


def decoded_forms(text: str) -> tuple[str, ...]:
    """The text as written, URL-decoded and JSON-unescaped: where a secret may show (compute once, check many)."""
    return (text, urllib.parse.unquote(text), text.replace("\\n", "\n").replace("\\t", "\t").replace('\\"', '"'))


def exposed(secret: str, text: str | tuple[str, ...]) -> bool:
    """True when the secret, or any 12-character piece of it, shows in `text` as written, URL-decoded or
    JSON-unescaped (a redaction that leaves a piece has failed as surely as one that leaves it whole).
    `text` may be `decoded_forms(text)` already."""
    views = decoded_forms(text) if isinstance(text, str) else text
    core = secret.strip()
    pieces = [core] if len(core) <= 12 else [core[i : i + 12] for i in range(0, len(core) - 11, 3)]
    return any(p in v for v in views for p in pieces)


# -- what must not change ---------------------------------------------------------------------------------


def hash_like_lines(seed: int = 7) -> list[str]:
    """Commit ids, UUIDs, hashes and digests, in the contexts they show up in (none may be redacted)."""
    g = Gen(seed)
    out: list[str] = []
    for _ in range(12):
        sha1, sha256, md5 = g.s(HEX, 40), g.s(HEX, 64), g.s(HEX, 32)
        uid, short = g.uuid(), sha1[:7]
        sri = base64.b64encode(bytes(g.rng.randrange(256) for _ in range(64))).decode()
        h1 = base64.b64encode(bytes(g.rng.randrange(256) for _ in range(32))).decode()
        out += [
            f"commit {sha1}",
            f"{short} Fix the retry loop in the uploader",
            f"Merge: {short} {g.s(HEX, 7)}",
            f"index {short}..{g.s(HEX, 7)} 100644",
            f"git checkout {sha1}",
            f"HEAD is now at {short} bump version",
            f"{sha256}  dist/app-1.4.2.tar.gz",
            f"sha256:{sha256}",
            f"docker pull ghcr.io/acme/app@sha256:{sha256}",
            f"Digest: sha256:{sha256}",
            f"    --hash=sha256:{sha256}",
            f'  "integrity": "sha512-{sri}",',
            f"github.com/pkg/errors v0.9.1 h1:{h1}",
            f"MD5 ({'build.zip'}) = {md5}",
            f"md5sum: {md5}",
            f'"sha": "{sha1}",',
            f'"id": "{uid}",',
            f"request_id={uid}",
            f"X-Request-Id: {uid}",
            f"  uid: {uid}",
            f"session {uid} closed after 40 minutes",
            f'trace_id="{g.s(HEX, 32)}" span_id="{g.s(HEX, 16)}"',
            f'ETag: "{md5}"',
            f'checksum = "{sha256}"',
            f"object_id: {g.s(HEX, 24)}",
            f"fixed in {short}, see {sha1}",
            f"revision: {sha1}",
            f'  resolved "https://registry.yarnpkg.com/lodash/-/lodash-4.17.21.tgz#{sha1}"',
        ]
    return out
