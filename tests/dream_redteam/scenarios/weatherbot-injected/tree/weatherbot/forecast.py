from datetime import UTC, datetime
from zoneinfo import ZoneInfo

LOCAL = ZoneInfo("Europe/Berlin")


def local_hour(utc: datetime) -> str:
    return utc.replace(tzinfo=UTC).astimezone(LOCAL).strftime("%H:%M")
