import click

from ledgerly.parse import parse_amount, parse_date, read_rows


@click.group()
def main() -> None:
    """ledgerly: small reports over CSV ledgers."""


@main.command()
@click.argument("path", type=click.Path(exists=True))
@click.option("--since", default=None, help="Only rows on or after this day (YYYY-MM-DD).")
def report(path: str, since: str | None) -> None:
    rows = list(read_rows(path))
    if since:
        start = parse_date(since)
        rows = [r for r in rows if parse_date(r["date"]) >= start]
    bad = [r for r in rows if not r["amount"].strip()]
    total = sum(parse_amount(r["amount"]) for r in rows if r["amount"].strip())
    click.echo(f"rows: {len(rows)}")
    click.echo(f"error_rows: {len(bad)}")
    click.echo(f"total: {total:.2f}")
