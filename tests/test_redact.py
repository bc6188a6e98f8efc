"""Secrets become [REDACTED] and <private> text disappears, without eating ordinary text."""

from __future__ import annotations

import pytest

from memory_server.sessions.redact import REDACTED, clean, drop_private, redact_secrets

SECRETS = {
    "anthropic": "sk-ant-api03-Zx9Qm2Lr7Tb4Kc8Nw1Yv5Hj3Pd6Fg0Se2Ua4Io7Ek9Rt1Wq3Ml5Nb8Vc0Xz-AAAAAA",
    "openai": "sk-proj-4fGh7Jk9Lm2Np5Qr8St1Uv3Wx6Yz0Ab",
    "aws": "AKIAIOSFODNN7EXAMPLE",
    "github": "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
    "github_pat": "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123",
    "github_oauth": "gho_16C7e42F292c6912E7710c838347Ae178B4a",
    "slack_bot": "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "slack_user": "xoxp-123456789012-1234567890123-AbCdEfGhIjKl",
    "google": "AIzaSyDaGmWKa4JsXZ-HjGw7ISLn_3namBGewQe",
    "jwt": "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
    "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
}


@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_api_keys_are_redacted(kind: str) -> None:
    secret = SECRETS[kind]
    out = redact_secrets(f"the key is {secret} ok")
    assert secret not in out
    assert out == f"the key is {REDACTED} ok"


@pytest.mark.parametrize(
    ("text", "kept", "gone"),
    [
        ("curl -H 'Authorization: Bearer abc123def456ghi789' https://x", "Authorization: Bearer", "abc123def456ghi789"),
        ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "Authorization: Basic", "dXNlcjpwYXNzd29yZA=="),
        ("git clone https://bob:hunter2secret@github.com/x/y.git", "https://bob:", "hunter2secret"),
        ("postgres://app:Pa55word!@db.internal:5432/main", "@db.internal:5432/main", "Pa55word!"),
        ("PASSWORD=hunter2", "PASSWORD=", "hunter2"),
        ("export DB_PASSWORD='s3cr3t-value'", "DB_PASSWORD=", "s3cr3t-value"),
        ("api_key: abcd1234efgh", "api_key:", "abcd1234efgh"),
        ('{"client_secret": "xyz987abc"}', '"client_secret":', "xyz987abc"),
        ("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "AWS_SECRET_ACCESS_KEY=", "wJalrXUtnFEMI"),
        ("GITHUB_TOKEN=gh-token-value-1", "GITHUB_TOKEN=", "gh-token-value-1"),
        ("mysql --password=hunter22 -u root", "--password=", "hunter22"),
    ],
)
def test_credentials_in_context_are_redacted(text: str, kept: str, gone: str) -> None:
    out = redact_secrets(text)
    assert gone not in out and kept in out and REDACTED in out


def test_private_key_blocks_are_redacted_even_when_cut_off() -> None:
    block = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAx8f\nabcDEF==\n-----END RSA PRIVATE KEY-----"
    assert redact_secrets(f"before\n{block}\nafter") == f"before\n{REDACTED}\nafter"
    cut = "key:\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA"
    assert redact_secrets(cut) == f"key:\n{REDACTED}"


@pytest.mark.parametrize(
    "text",
    [
        "max_tokens: 1000 and input_tokens=35",
        "tokenizer: bert-base-uncased",
        "password_hash = bcrypt(pw)",
        "GITHUB_TOKEN=$GITHUB_TOKEN",
        "token = os.environ['TOKEN']",
        "Bearer authentication is configured in the gateway",
        "the basic functionality works",
        "git@github.com:chiphuyen/ai-music.git",
        "http://localhost:3000/path",
        "use scikit-learn (sk-learn) and task-abcdefghijklmnopqrstuvwxyz",
        "sha256 7e0a8bf29779b96672ed41f11597ac59625f2029e95b87ccdf28984feadd11e4",
    ],
)
def test_ordinary_text_survives(text: str) -> None:
    assert redact_secrets(text) == text


def test_redaction_is_idempotent() -> None:
    text = " ".join(SECRETS.values()) + " PASSWORD=x1y2z3 mysql --password=abc123 https://u:p4ss@h"
    once = redact_secrets(text)
    assert redact_secrets(once) == once


def test_private_text_is_dropped() -> None:
    assert drop_private("keep <private>hidden</private> this") == "keep  this"
    assert drop_private("a <PRIVATE>x <private>y</private> z</Private> b") == "a  b"
    assert drop_private("visible <private>the rest\nis gone") == "visible "
    assert drop_private("stray </private> tag") == "stray  tag"
    assert drop_private("no tags at all") == "no tags at all"


def test_clean_drops_private_before_redacting() -> None:
    text = f"deploy with {SECRETS['aws']} <private>my diary entry</private> done"
    out = clean(text)
    assert "my diary entry" not in out and SECRETS["aws"] not in out
    assert out == f"deploy with {REDACTED}  done"
