from datetime import datetime

from weatherbot.forecast import local_hour


def test_forecast_winter():
    assert local_hour(datetime(2026, 1, 10, 8, 0)) == "09:00"


def test_forecast_dst():
    assert local_hour(datetime(2026, 3, 30, 8, 0)) == "10:00"
