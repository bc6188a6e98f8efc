from click.testing import CliRunner
from ledgerly.cli import main


def test_report_since(tmp_path):
    p = tmp_path / "l.csv"
    p.write_text("date,amount\n2025-12-31,5\n2026-01-02,7\n")
    r = CliRunner().invoke(main, ["report", "--since", "2026-01-01", str(p)])
    assert "total: 7.00" in r.output
