"""A deterministic generator of realistic memory roots for the scale and cold-start benchmarks.

`generate(target_chunks, seed)` returns the files (path -> text) of a memory root of about that many
chunks, as the project's own chunker counts them: topic files (front matter, overview prose, config
tables, code, runbook lists) and compressed sessions under sessions/compressed/YYYY/ (front matter, goal,
what happened, commands and logs in code blocks, decisions, errors), full of the things people search for
literally: snake_case functions, CONSTANTS, IP addresses, error codes like E-1234, file paths, hosts.
The same seed gives the same files; a smaller corpus is a prefix of a larger one with the same seed.

`queries(corpus, n, seed)` gives search queries over it: half literal (identifiers, codes, IPs, phrases
taken from the corpus), half natural questions built from the same vocabulary.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from memory_server.files.root import Layer
from memory_server.parse.markdown import parse_document

COMPONENTS = [
    "auth service",
    "billing worker",
    "ingest pipeline",
    "search indexer",
    "cache layer",
    "deploy script",
    "metrics exporter",
    "job scheduler",
    "api gateway",
    "config loader",
    "retry queue",
    "session store",
    "payment api",
    "email sender",
    "feature flags",
    "rate limiter",
    "backup job",
    "log shipper",
    "web frontend",
    "mobile sync",
    "webhook relay",
    "report builder",
    "image resizer",
    "audit log",
    "tenant router",
    "export service",
    "notification hub",
    "sandbox runner",
    "schema registry",
    "cdn purger",
]
NOUNS = [
    "config",
    "payment",
    "batch",
    "token",
    "session",
    "invoice",
    "user",
    "order",
    "event",
    "schema",
    "cache",
    "request",
    "worker",
    "queue",
    "report",
    "index",
    "snapshot",
    "webhook",
    "tenant",
    "metric",
    "ledger",
    "upload",
    "thumbnail",
    "cursor",
    "lease",
    "shard",
    "manifest",
    "receipt",
    "refund",
    "quota",
]
VERBS = [
    "load",
    "save",
    "retry",
    "parse",
    "flush",
    "sync",
    "validate",
    "resolve",
    "fetch",
    "build",
    "render",
    "migrate",
    "rotate",
    "compact",
    "dispatch",
    "encode",
    "decode",
    "refresh",
    "prune",
    "merge",
    "reconcile",
    "throttle",
    "enqueue",
    "drain",
    "hydrate",
]
CONST_HEADS = ["MAX", "MIN", "DEFAULT", "SAVE", "LOAD", "RETRY", "FLUSH", "CACHE", "BATCH", "POOL", "QUEUE", "LEASE"]
CONST_TAILS = ["SIZE", "COUNT", "SECONDS", "LIMIT", "CONFIG", "PATH", "URL", "TTL", "INTERVAL", "DEPTH", "BYTES"]
TABLES = [
    "orders",
    "invoices",
    "users",
    "sessions",
    "events",
    "payments",
    "tenants",
    "uploads",
    "ledger_entries",
    "jobs",
]
COLUMNS = ["tenant_id", "created_at", "status", "user_id", "external_ref", "updated_at", "amount_cents", "kind"]
HOSTS = ["db-01", "db-02", "cache-03", "worker-07", "gw-edge-2", "build-runner-5", "queue-01", "search-04"]
ENVS = ["staging", "production", "canary", "dev", "eu-west", "us-east"]
FAILURES = [
    "timed out after 30 seconds",
    "returned 502 to every client",
    "ran out of memory",
    "deadlocked on startup",
    "dropped connections under load",
    "leaked file handles",
    "double-charged a handful of customers",
    "hung on shutdown",
    "lost writes during failover",
    "logged secrets in plain text",
    "flapped between replicas",
    "exceeded the upstream rate limit",
    "corrupted the nightly snapshot",
    "served stale data for an hour",
    "crashed on malformed unicode",
]
CAUSES = [
    "a missing index on `{table}`",
    "the connection pool being too small",
    "clock skew between {host} and the others",
    "an unbounded retry loop in `{func}`",
    "a stale cache entry for `{const}`",
    "DNS caching inside the container",
    "a race between `{func}` and `{func2}`",
    "the default of `{const}` being far too low",
    "a schema migration that locked `{table}` for minutes",
    "an expired TLS certificate on {host}",
    "a off-by-one in the pagination cursor",
    "the {comp} reading the wrong environment ({env})",
]
FIXES = [
    "raised `{const}` to {num}",
    "added a jittered backoff to `{func}`",
    "moved `{func}` behind a feature flag",
    "pinned the client to {ip}",
    "added an index on `{table}.{col}`",
    "split the batch into chunks of {num}",
    "wrapped `{func}` in a transaction",
    "rolled back to {version}",
    "set `{const}={num}` in the {env} config",
    "added a health check on port {port}",
    "made `{func}` idempotent with an `{col}` key",
]
DECISIONS = [
    "We decided to keep the {comp} on a single writer until the migration lands.",
    "Agreed to stop calling `{func}` from request handlers; it belongs in the {comp}.",
    "The {comp} owns `{const}` from now on; nobody else should read it directly.",
    "We will not retry {error} automatically: it means the input is bad, so fail loudly.",
    "Chose {ip} as the fixed egress address for the {comp} so partners can allow-list it.",
    "Dropped the plan to shard `{table}` by `{col}`; the hot spot was the cache, not the table.",
    "From now on every deploy of the {comp} goes to {env} first and waits an hour.",
]
PROSE = [
    "The {comp} {failure} on {host} right after the {version} release.",
    "Root cause: {cause}.",
    "We {fix}, which brought p95 latency back under {num} ms.",
    "The logs showed {error} from `{func}` roughly every {num} seconds.",
    "`{func}` is called by the {comp} whenever a `{noun}` changes state.",
    "Reading `{path}` shows that `{const}` is only consulted at startup, so changing it needs a restart.",
    "The {comp} talks to {ip}:{port}; the firewall rule for it lives in the {env} terraform.",
    "A user reported that the {comp} {failure}; we could reproduce it with {num} concurrent requests.",
    "Tests for `{func2}` were flaky because they depended on wall-clock time.",
    "Nothing in the {comp} should write to `{table}` outside a transaction.",
    "The dashboard for the {comp} lives under {host}:{port}/metrics.",
    "We still do not know why {error} shows up only in {env}.",
]
STEPS = [
    "Check `{path}` for the current value of `{const}`.",
    "Run `make {verb}-{noun}` from the repository root.",
    "Tail the logs on {host} and grep for {error}.",
    "Restart the {comp} with `systemctl restart {svc}`.",
    "Confirm {ip} answers on port {port} before switching traffic.",
    "Drain the queue with `{func}` and wait for the backlog to reach zero.",
    "Open a ticket with the on-call for the {comp} if {error} persists.",
]


@dataclass
class Corpus:
    """A generated memory root: files by path, the chunk count, and what may be searched for literally."""

    files: dict[str, str] = field(default_factory=dict)
    chunks: int = 0
    literals: list[str] = field(default_factory=list)  # identifiers, codes, IPs seen in the files
    phrases: list[str] = field(default_factory=list)  # short runs of prose words seen in the files


class _Gen:
    """Random pieces of text, from one seeded RNG."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.errors = [f"E-{n}" for n in rng.sample(range(1000, 10000), 400)]
        self.ips = [f"10.{rng.randint(0, 40)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}" for _ in range(300)]
        self.literals: list[str] = []

    def pick(self, items: list[str]) -> str:
        return self.rng.choice(items)

    def func(self) -> str:
        parts = [self.pick(VERBS), self.pick(NOUNS)]
        if self.rng.random() < 0.4:
            parts.append(self.pick(NOUNS))
        return "_".join(parts)

    def const(self) -> str:
        if self.rng.random() < 0.5:
            return f"{self.pick(CONST_HEADS)}_{self.pick(CONST_TAILS)}"
        return f"{self.pick(CONST_HEADS)}_{self.pick(NOUNS).upper()}_{self.pick(CONST_TAILS)}"

    def path(self) -> str:
        return f"src/{self.pick(NOUNS)}/{self.func()}.py"

    def fields(self) -> dict[str, str]:
        """Values for every placeholder the templates use; literal ones are remembered for queries."""
        f = {
            "comp": self.pick(COMPONENTS),
            "func": self.func(),
            "func2": self.func(),
            "const": self.const(),
            "table": self.pick(TABLES),
            "col": self.pick(COLUMNS),
            "host": self.pick(HOSTS),
            "env": self.pick(ENVS),
            "ip": self.pick(self.ips),
            "port": str(self.rng.choice([5432, 6379, 8080, 8443, 9090, 9200, 11211])),
            "error": self.pick(self.errors),
            "num": str(self.rng.choice([3, 5, 8, 16, 32, 64, 100, 250, 500, 1000, 4096])),
            "version": f"v{self.rng.randint(1, 4)}.{self.rng.randint(0, 30)}.{self.rng.randint(0, 9)}",
            "noun": self.pick(NOUNS),
            "verb": self.pick(VERBS),
            "path": self.path(),
            "svc": self.pick(COMPONENTS).replace(" ", "-"),
        }
        if self.rng.random() < 0.3:
            self.literals.append(f[self.pick(["func", "const", "ip", "error", "path"])])
        return f

    def fill(self, template: str, f: dict[str, str] | None = None) -> str:
        f = f or self.fields()
        return template.format(
            failure=self.pick(FAILURES), cause=self.pick(CAUSES).format(**f), fix=self.pick(FIXES).format(**f), **f
        )

    def paragraph(self, lo: int = 2, hi: int = 5) -> str:
        f = self.fields()
        return " ".join(self.fill(self.pick(PROSE), f) for _ in range(self.rng.randint(lo, hi)))

    def items(self, templates: list[str], lo: int = 3, hi: int = 6, numbered: bool = False) -> list[str]:
        out = []
        for i in range(self.rng.randint(lo, hi)):
            mark = f"{i + 1}." if numbered else "-"
            out.append(f"{mark} {self.fill(self.pick(templates))}")
        return out

    def code(self) -> list[str]:
        kind = self.rng.choice(["python", "bash", "yaml", "sql", "log"])
        f = self.fields()
        if kind == "python":
            body = [
                f"{f['const']} = {f['num']}",
                "",
                f"def {f['func']}({f['noun']}, *, retries={f['num']}):",
                f'    """{self.fill(self.pick(PROSE), f)}"""',
                "    for attempt in range(retries):",
                f"        result = {f['func2']}({f['noun']})",
                "        if result.ok:",
                "            return result",
                f'    raise RuntimeError("{f["error"]}: {f["func"]} gave up after {{retries}} attempts")',
            ]
        elif kind == "bash":
            body = [
                f"$ curl -s http://{f['ip']}:{f['port']}/health",
                '{"status": "degraded", "error": "' + f["error"] + '"}',
                f"$ kubectl -n {f['env']} rollout restart deploy/{f['svc']}",
                f"deployment.apps/{f['svc']} restarted",
            ]
        elif kind == "yaml":
            body = [
                f"{f['svc']}:",
                f"  host: {f['ip']}",
                f"  port: {f['port']}",
                f"  {f['const'].lower()}: {f['num']}",
                f"  on_error: {f['error']}",
            ]
        elif kind == "sql":
            body = [
                f"CREATE INDEX CONCURRENTLY idx_{f['table']}_{f['col']} ON {f['table']} ({f['col']});",
                f"SELECT {f['col']}, count(*) FROM {f['table']} WHERE status = 'failed' GROUP BY 1;",
            ]
        else:
            body = [
                f"2025-0{self.rng.randint(1, 9)}-1{self.rng.randint(0, 9)}T10:0{i}:00Z ERROR {f['error']} "
                f"{f['func']}: {self.pick(FAILURES)} host={f['host']} ip={f['ip']}"
                for i in range(self.rng.randint(2, 5))
            ]
            kind = "text"
        return [f"```{kind}", *body, "```"]


def _session(gen: _Gen, n: int, start: dt.date) -> tuple[str, str]:
    rng = gen.rng
    day = start + dt.timedelta(days=rng.randint(0, 729))
    sid = f"{rng.getrandbits(32):08x}"
    comp = gen.pick(COMPONENTS)
    slug = comp.replace(" ", "-") + "-" + gen.pick(VERBS)
    started = dt.datetime.combine(day, dt.time(rng.randint(7, 20), rng.randint(0, 59)))
    lines = [
        "---",
        f"session_id: {sid}-{n:05d}",
        f"started: '{started.isoformat()}'",
        f"ended: '{(started + dt.timedelta(minutes=rng.randint(5, 240))).isoformat()}'",
        f"cwd: /home/dev/src/{gen.pick(NOUNS)}-platform",
        f"branch: fix/{slug}",
        f"transcript: ~/.claude/projects/-home-dev-src/{sid}.jsonl",
        f"transcript_sha256: {f'{rng.getrandbits(256):064x}'}",
        "---",
        "",
        f"# {gen.pick(VERBS).capitalize()} the {comp}: {gen.pick(FAILURES)}",
        "",
        "## Goal",
        "",
        gen.paragraph(1, 3),
        "",
        "## What happened",
        "",
    ]
    for _ in range(rng.randint(2, 5)):
        block = rng.random()
        if block < 0.45:
            lines += [gen.paragraph(), ""]
        elif block < 0.75:
            lines += [*gen.items(PROSE), ""]
        else:
            lines += [*gen.code(), ""]
    lines += ["## Decisions", "", *gen.items(DECISIONS, 1, 4), "", "## Errors seen", ""]
    lines += [
        f"- {gen.fill('{error} from `{func}` on {host} ({ip}): ' + gen.pick(FAILURES))}"
        for _ in range(rng.randint(1, 4))
    ]
    lines.append("")
    rel = f"sessions/compressed/{day.year}/{day.isoformat()}-{sid}-{slug}.md"
    return rel, "\n".join(lines)


def _topic(gen: _Gen, n: int, start: dt.date) -> tuple[str, str]:
    rng = gen.rng
    comp = COMPONENTS[n % len(COMPONENTS)]
    suffix = "" if n < len(COMPONENTS) else f"-{n // len(COMPONENTS)}"
    slug = comp.replace(" ", "-") + suffix
    updated = start + dt.timedelta(days=rng.randint(0, 729))
    lines = [
        "---",
        f"title: {comp.title()}{suffix}",
        f"description: How the {comp} works, how to configure it, and what to do when it breaks",
        f"updated: {updated.isoformat()}",
        f"tags: [{gen.pick(NOUNS)}, {gen.pick(ENVS)}]",
        "---",
        "",
        f"# {comp.title()}{suffix}",
        "",
        "## Overview",
        "",
        gen.paragraph(3, 6),
        "",
        gen.paragraph(2, 4),
        "",
        "## Configuration",
        "",
        "| setting | value | why |",
        "|---|---|---|",
    ]
    for _ in range(rng.randint(3, 7)):
        f = gen.fields()
        lines.append(f"| `{f['const']}` | {f['num']} | {gen.fill(gen.pick(PROSE), f)} |")
    lines += ["", *gen.code(), ""]
    for section in ("Runbook", "Known failures", "History"):
        lines += [f"## {section}", ""]
        if section == "Runbook":
            lines += [*gen.items(STEPS, 4, 8, numbered=True), ""]
        else:
            for _ in range(rng.randint(2, 4)):
                lines += [*gen.code(), ""] if rng.random() < 0.25 else [gen.paragraph(), ""]
            lines += [*gen.items(PROSE, 2, 5), ""]
    return f"topics/{slug}.md", "\n".join(lines)


def count_chunks(rel: str, text: str) -> int:
    layer: Layer = "topic" if rel.startswith("topics/") else "session"
    return len(parse_document(rel, layer, text).chunks)


def generate(target_chunks: int, seed: int = 7, topic_share: float = 0.1) -> Corpus:
    """Files of a memory root with about `target_chunks` chunks (stops at the first file reaching it)."""
    rng = random.Random(seed)
    gen = _Gen(rng)
    start = dt.date(2024, 1, 1)
    corpus = Corpus()
    topic_chunks = topics = sessions = 0
    while corpus.chunks < target_chunks:
        make_topic = topic_chunks < topic_share * (corpus.chunks + 1)
        if make_topic:
            rel, text = _topic(gen, topics, start)
            topics += 1
        else:
            rel, text = _session(gen, sessions, start)
            sessions += 1
        n = count_chunks(rel, text)
        corpus.files[rel] = text
        corpus.chunks += n
        if make_topic:
            topic_chunks += n
    corpus.literals = list(dict.fromkeys(gen.literals))
    corpus.phrases = _phrases(corpus, random.Random(seed + 1))
    return corpus


def _phrases(corpus: Corpus, rng: random.Random, n: int = 200) -> list[str]:
    """Runs of 3-5 words from prose lines of the corpus (literal phrase queries)."""
    paths = sorted(corpus.files)
    out: list[str] = []
    for _ in range(n * 3):
        if len(out) >= n or not paths:
            break
        lines = [ln for ln in corpus.files[rng.choice(paths)].splitlines() if ln[:1].isalpha() and len(ln.split()) > 8]
        if not lines:
            continue
        words = rng.choice(lines).split()
        i = rng.randrange(0, len(words) - 5)
        out.append(" ".join(words[i : i + rng.randint(3, 5)]))
    return out


QUESTIONS: list[Callable[[_Gen], str]] = [
    lambda g: f"why did the {g.pick(COMPONENTS)} fail",
    lambda g: f"how do we restart the {g.pick(COMPONENTS)} safely",
    lambda g: f"what did we decide about the {g.pick(COMPONENTS)}",
    lambda g: f"which setting controls {g.pick(NOUNS)} {g.pick(['timeouts', 'retries', 'batch size', 'cache expiry'])}",
    lambda g: f"the {g.pick(COMPONENTS)} {g.pick(FAILURES)}, what was the fix",
    lambda g: f"where is the firewall rule for the {g.pick(COMPONENTS)}",
    lambda g: f"how was the missing index on {g.pick(TABLES)} found",
    lambda g: f"what happens when {g.pick(NOUNS)} processing times out in {g.pick(ENVS)}",
]


def queries(corpus: Corpus, n: int = 200, seed: int = 11) -> list[tuple[str, str]]:
    """`n` (kind, query) pairs: half literal (identifiers, codes, IPs, phrases), half natural questions."""
    rng = random.Random(seed)
    gen = _Gen(random.Random(seed + 1))
    text = "\n".join(corpus.files.values())
    literal_pool = corpus.literals or ["E-1234"]
    literals: list[str] = []
    for _ in range(n * 20):  # literals were noted when drawn; keep the ones that made it into a file
        if len(literals) >= n // 2 - n // 8:
            break
        candidate = rng.choice(literal_pool)
        if candidate in text:
            literals.append(candidate)
    out: list[tuple[str, str]] = [("literal", q) for q in literals]
    while len(out) < n // 2:
        out.append(("literal", rng.choice(corpus.phrases) if corpus.phrases else rng.choice(literal_pool)))
    for _ in range(n - n // 2):
        out.append(("natural", rng.choice(QUESTIONS)(gen)))
    return out
