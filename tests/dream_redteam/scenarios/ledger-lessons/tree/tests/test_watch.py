from clock import FakeClock
from ledgerly.watch import Watcher


def test_watch_emits_event(tmp_path):
    clock = FakeClock()
    w = Watcher(tmp_path, clock=clock)
    w.poll()
    (tmp_path / "a.csv").write_text("date,amount\n")
    clock.advance(1.0)
    assert w.poll() == ["added"]
