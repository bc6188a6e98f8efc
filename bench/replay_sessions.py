"""Sessions written by hand for bench/failure_replay.py: two projects whose agents make the same mistakes again.

The real sessions of ../shared/transcripts repeat too few errors with a fix on record to measure the failure
hook's precision (the replay finds none), so these add repeated mistakes, each fixed every time, over days of
sessions, written record by record as Claude Code writes them (tests/session_script.py). They hold the cases a
lookup must get right: the same error in another file or at another line (the same mistake), and near misses
that must not match: another module, another symbol, another type, an error that was never fixed.

    write_all(folder) -> folder   # folder/<project>/<session-id>.jsonl
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

from session_script import Script


@dataclass(frozen=True)
class Mistake:
    """A command that fails with `error`, the steps that fix it, and the output of the command once fixed."""

    command: str
    error: str
    fix: tuple[tuple[str, ...], ...]  # ("bash", command, output) | ("edit", path, old, new) | ("write", path, text)
    ok: str
    fixed: bool = True  # False: the session gives up (no fix on record)


def _py(body: str) -> str:
    return (
        f'Traceback (most recent call last):\n  File "/home/dev/billing/tests/conftest.py", line 3, in <module>\n{body}'
    )


MISTAKES: dict[str, Mistake] = {
    "not-installed": Mistake(
        "pytest -q",
        _py("    from billing.app import create_app\nModuleNotFoundError: No module named 'billing'"),
        (("bash", "pip install -e '.[test]'", "Successfully installed billing-0.3.0"),),
        "41 passed in 2.31s",
    ),
    "package-init": Mistake(  # a near miss of not-installed: another module, another fix
        "pytest -q tests/test_tax.py",
        _py("    from billing.tax import vat_rate\nModuleNotFoundError: No module named 'billing.tax'"),
        (("write", "billing/tax/__init__.py", "from billing.tax.rates import vat_rate\n"),),
        "6 passed in 0.40s",
    ),
    "port-taken": Mistake(
        "docker compose up -d db",
        "Error response from daemon: driver failed programming external connectivity on endpoint billing-db-1: "
        "Bind for 0.0.0.0:5432 failed: port is already allocated",
        (("bash", "docker stop legacy-postgres", "legacy-postgres"),),
        " Container billing-db-1  Started",
    ),
    "no-table": Mistake(
        "pytest -q tests/test_invoices.py",
        'E   sqlalchemy.exc.ProgrammingError: (psycopg.errors.UndefinedTable) relation "invoices" does not exist',
        (("bash", "alembic upgrade head", "INFO  [alembic.runtime.migration] Running upgrade  -> 4f2a, invoices"),),
        "14 passed in 1.12s",
    ),
    "no-table-refunds": Mistake(  # a near miss of no-table: another table, created by another migration
        "pytest -q tests/test_refunds.py",
        'E   sqlalchemy.exc.ProgrammingError: (psycopg.errors.UndefinedTable) relation "refunds" does not exist',
        (
            ("write", "migrations/versions/9c1d_refunds.py", "def upgrade():\n    op.create_table('refunds')\n"),
            ("bash", "alembic upgrade head", "INFO  [alembic.runtime.migration] Running upgrade 4f2a -> 9c1d"),
        ),
        "5 passed in 0.51s",
    ),
    "union-attr": Mistake(
        "mypy billing",
        'billing/invoice.py:42: error: Item "None" of "Customer | None" has no attribute "email"  [union-attr]\n'
        "Found 1 error in 1 file (checked 23 source files)",
        (
            (
                "edit",
                "billing/invoice.py",
                "to = invoice.customer.email",
                "to = invoice.customer.email if invoice.customer else None",
            ),
        ),
        "Success: no issues found in 23 source files",
    ),
    "union-attr-name": Mistake(  # a near miss of union-attr: another attribute
        "mypy billing",
        'billing/reminders.py:17: error: Item "None" of "Customer | None" has no attribute "name"  [union-attr]\n'
        "Found 1 error in 1 file (checked 24 source files)",
        (
            (
                "edit",
                "billing/reminders.py",
                "greeting = customer.name",
                "greeting = customer.name if customer else 'there'",
            ),
        ),
        "Success: no issues found in 24 source files",
    ),
    "missing-dep": Mistake(
        "npm run build",
        '> web@0.1.0 build\n> vite build\n\nerror during build:\n[vite]: Rollup failed to resolve import "date-fns" '
        'from "/home/dev/billing/web/src/components/InvoiceTable.tsx".',
        (("bash", "npm install date-fns", "added 1 package, and audited 212 packages in 2s"),),
        "✓ built in 3.02s",
    ),
    "port-3000": Mistake(
        "npm run dev",
        "Error: listen EADDRINUSE: address already in use :::3000\n    at Server.setupListenHandle [as _listen2] "
        "(node:net:1817:16)",
        (("bash", "kill $(lsof -t -i:3000)", ""),),
        "  VITE v5.2.0  ready in 412 ms",
    ),
    "errcheck": Mistake(
        "golangci-lint run ./...",
        "internal/export/csv.go:88:15: Error return value of `w.Flush` is not checked (errcheck)\n"
        "1 issues:\n* errcheck: 1",
        (("edit", "internal/export/csv.go", "w.Flush()", "if err := w.Flush(); err != nil {\n\t\treturn err\n\t}"),),
        "0 issues.",
    ),
    "errcheck-close": Mistake(  # a near miss of errcheck: another call
        "golangci-lint run ./...",
        "internal/export/pdf.go:31:12: Error return value of `f.Close` is not checked (errcheck)\n"
        "1 issues:\n* errcheck: 1",
        (("edit", "internal/export/pdf.go", "defer f.Close()", "defer func() { _ = f.Close() }()"),),
        "0 issues.",
    ),
    "role-missing": Mistake(
        "psql -U billing -d billing -c 'select 1'",
        'psql: error: connection to server on socket "/var/run/postgresql/.s.PGSQL.5432" failed: FATAL:  role '
        '"billing" does not exist',
        (("bash", "sudo -u postgres createuser --superuser billing", ""),),
        " ?column? \n----------\n        1\n(1 row)",
    ),
    "env-key": Mistake(
        "pytest -q tests/test_gateway.py",
        "E   KeyError: 'BILLING_GATEWAY_KEY'\n\nbilling/gateway.py:12: KeyError",
        (("write", ".env.test", "BILLING_GATEWAY_KEY=test-key\n"),),
        "9 passed in 0.77s",
    ),
    "flaky-timeout": Mistake(  # never fixed: no fix on record, so nothing to inject later
        "pytest -q tests/test_webhooks.py",
        "E   httpx.ReadTimeout: timed out while waiting for http://localhost:8025/hooks/stripe",
        (),
        "",
        fixed=False,
    ),
    "tsc-undefined": Mistake(
        "npx tsc --noEmit",
        "src/api/client.ts(14,7): error TS2322: Type 'string | undefined' is not assignable to type 'string'.",
        (
            (
                "edit",
                "web/src/api/client.ts",
                "const base: string = import.meta.env.VITE_API",
                "const base = import.meta.env.VITE_API ?? '/api'",
            ),
        ),
        "",
    ),
}

# (project, day, the person's request, the mistakes the session makes, in order)
SESSIONS: list[tuple[str, str, str, list[str]]] = [
    (
        "billing",
        "2026-03-02",
        "Set up the billing service and get its tests running.",
        ["not-installed", "port-taken", "no-table"],
    ),
    (
        "billing",
        "2026-03-03",
        "Add VAT rates to invoices.",
        ["package-init", "union-attr", "flaky-timeout"],
    ),
    (
        "billing",
        "2026-03-04",
        "Start the invoice table in the web app.",
        ["missing-dep", "port-3000", "tsc-undefined"],
    ),
    (
        "billing",
        "2026-03-05",
        "Export invoices as CSV.",
        ["errcheck", "role-missing", "env-key"],
    ),
    (
        "billing",
        "2026-03-06",
        "Fresh checkout on the new laptop: run the whole suite.",
        ["not-installed", "port-taken", "no-table", "role-missing"],
    ),
    (
        "billing",
        "2026-03-07",
        "Reminder e-mails for unpaid invoices.",
        ["union-attr-name", "union-attr", "flaky-timeout", "env-key"],
    ),
    (
        "billing",
        "2026-03-09",
        "Web: filter invoices by status.",
        ["port-3000", "missing-dep", "tsc-undefined"],
    ),
    (
        "billing",
        "2026-03-10",
        "PDF export of invoices.",
        ["errcheck-close", "errcheck", "no-table-refunds"],
    ),
    (
        "billing",
        "2026-03-11",
        "CI image: run the tests in a clean container.",
        ["not-installed", "role-missing", "no-table", "env-key"],
    ),
    (
        "billing",
        "2026-03-12",
        "Refunds end to end.",
        ["no-table-refunds", "port-taken", "union-attr", "port-3000"],
    ),
    (
        "billing",
        "2026-03-13",
        "Dashboard totals in the web app.",
        ["missing-dep", "tsc-undefined", "errcheck"],
    ),
    (
        "billing",
        "2026-03-16",
        "Move the dev database to the new compose file.",
        ["role-missing", "no-table", "union-attr"],
    ),
    (
        "ledger",
        "2026-04-01",
        "Bootstrap the ledger service like billing.",
        ["not-installed", "port-taken"],
    ),
    (
        "ledger",
        "2026-04-02",
        "Ledger migrations and tests.",
        ["no-table", "not-installed", "port-taken"],
    ),
]


def session(project: str, n: int, day: str, request: str, mistakes: list[str]) -> Script:
    sid = f"{n:08x}-{project[:4].encode().hex()}-4000-8000-{n:012x}"
    s = Script(sid, dt.datetime.fromisoformat(day).replace(hour=9, tzinfo=dt.UTC), cwd=f"/home/dev/{project}")
    s.user(request)
    for name in mistakes:
        m = MISTAKES[name]
        s.bash(m.command, m.error, error=True)
        if not m.fixed:
            s.assistant("That test needs the mail catcher running; leaving it for now.")
            continue
        for step in m.fix:
            if step[0] == "bash":
                s.bash(step[1], step[2])
            elif step[0] == "edit":
                s.edit(step[1], step[2], step[3])
            else:
                s.write(step[1], step[2])
        s.bash(m.command, m.ok)
    s.assistant("Done; everything above passes now.")
    return s


def write_all(folder: Path) -> Path:
    """Write every hand-written session under `folder/<project>/` and return `folder`."""
    for n, (project, day, request, mistakes) in enumerate(SESSIONS, 1):
        session(project, n, day, request, mistakes).save(folder / project)
    return folder
