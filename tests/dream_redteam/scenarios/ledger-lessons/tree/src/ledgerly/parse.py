import csv
from datetime import date
from decimal import Decimal


def parse_amount(text: str) -> Decimal:
    return Decimal(text.replace(",", ""))


def parse_date(text: str) -> date:
    return date.fromisoformat(text)


def read_rows(path: str):
    with open(path, newline="") as f:
        yield from csv.DictReader(f)
