"""Secrets become [REDACTED] and <private> text disappears, without eating ordinary text."""

from __future__ import annotations

from pathlib import Path

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


# -- <private> through a whole session: attributes, spans across messages, later repetitions ----------------


def _session_records(sid: str) -> list[dict[str, object]]:
    def rec(kind: str, n: int, content: object, **extra: object) -> dict[str, object]:
        message: dict[str, object] = {"role": kind, "content": content}
        if kind == "assistant":
            message["id"] = f"msg_{n}"
        return {
            "type": kind,
            "sessionId": sid,
            "uuid": f"00000000-0000-4000-8000-{n:012d}",
            "timestamp": f"2026-03-01T10:{n:02d}:00Z",
            "cwd": "/home/dev/app",
            "gitBranch": "main",
            "version": "2.0.14",
            "message": message,
            **extra,
        }

    def tool(n: int, name: str, tool_input: dict[str, object], output: str) -> list[dict[str, object]]:
        tid = f"toolu_{n}"
        return [
            rec("assistant", n, [{"type": "tool_use", "id": tid, "name": name, "input": tool_input}]),
            rec("user", n + 1, [{"type": "tool_result", "tool_use_id": tid, "content": output}]),
        ]

    return [
        rec(
            "user",
            1,
            '<private reason="client work">Project Bluefinch for Halvorsen Ltd</private> Fix the login redirect loop',
        ),
        rec("assistant", 2, [{"type": "text", "text": "Looking at the redirect handler."}]),
        rec("user", 3, "Also <private>the merger closes on 2026-04-30,"),
        rec("user", 4, "nobody may know about Oakridge Capital yet"),
        rec("user", 5, "that is all</private> and keep the tests green"),
        rec(
            "assistant",
            6,
            [
                {
                    "type": "text",
                    "text": "Understood: Bluefinch for Halvorsen Ltd stays quiet, and Oakridge Capital too.",
                }
            ],
        ),
        *tool(7, "Bash", {"command": "git commit -m 'Bluefinch: fix redirect for Halvorsen Ltd'"}, "ok"),
        *tool(
            9,
            "TodoWrite",
            {
                "todos": [
                    {
                        "content": "Tell Oakridge Capital about the 2026-04-30 date",
                        "status": "pending",
                        "activeForm": "Telling",
                    }
                ]
            },
            "ok",
        ),
        *tool(11, "Write", {"file_path": "/home/dev/app/docs/bluefinch-halvorsen.md", "content": "notes"}, "ok"),
        rec("assistant", 13, [{"type": "text", "text": "Fixed the login redirect loop."}]),
    ]


PRIVATE_WORDS = (
    "Bluefinch",
    "Halvorsen",
    "Oakridge",
    "2026-04-30",
    "merger",
    "nobody may know",
    "client work",
    "bluefinch",
)


def test_private_text_never_reaches_a_summary_the_index_or_the_transcript_layer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    from memory_server import Memory
    from memory_server.files.root import MemoryRoot
    from memory_server.files.scaffold import init_root
    from memory_server.sessions.compress import compress_transcript

    config = tmp_path / "claude"
    folder = config / "projects" / "-home-dev-app"
    folder.mkdir(parents=True)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    sid = "5e551011-0000-4000-8000-000000000001"
    transcript = folder / f"{sid}.jsonl"
    transcript.write_text("".join(json.dumps(r) + "\n" for r in _session_records(sid)), encoding="utf-8")
    root = tmp_path / "root"
    init_root(root)
    [summary] = compress_transcript(transcript, MemoryRoot(root))
    text = summary.read_text(encoding="utf-8")
    assert "login redirect loop" in text and "keep the tests green" in text  # the rest is kept
    memory = Memory(root, keyword_only=True)
    try:
        memory.index()
        layer = memory.read("transcript:" + sid, 1, 20).text
        assert "login redirect" in layer
        state = "\n".join(
            p.read_bytes().decode("utf-8", "replace") for p in sorted((root / ".memory").rglob("*")) if p.is_file()
        )
        found = [
            w
            for w in PRIVATE_WORDS
            if w in summary.name
            or w in text
            or w in layer
            or w in state
            or memory.search_exact(w, layers=["topic", "session", "transcript"])
        ]
    finally:
        memory.close()
    assert found == []


def test_session_redactor_pieces() -> None:
    from memory_server.sessions.redact import PRIVATE_MARK, SessionRedactor

    r = SessionRedactor()
    assert r.text("<private reason=\"x\" until='later'>Codename Zephyr-9</private>ok") == "ok"
    assert r.text("start <private>open across") == "start "
    assert r.private_open
    assert r.text("messages here") == ""
    assert r.text("closed</private> visible") == " visible"
    assert not r.private_open
    assert r.text("we ship Zephyr-9 soon") == f"we ship {PRIVATE_MARK} soon"
    assert r.text("messages here again") == f"{PRIVATE_MARK} again"
    # a stray tag in tool output hides the rest of that output only, not the session
    assert r.text("cat notes: <private> tail", carries=False) == "cat notes: "
    assert not r.private_open and r.text("next message") == "next message"
