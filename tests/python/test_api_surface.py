"""docs/api_surface.md is generated from the code (issue 19): it must match what the installed oar exports."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REPORT = os.path.join(ROOT, "tools", "api_surface", "report.py")


def test_api_surface_page_is_current():
    r = subprocess.run([sys.executable, REPORT, "--check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr + " (regenerate with: python tools/api_surface/report.py)"


def test_report_counts_a_missing_name(monkeypatch):
    sys.path.insert(0, os.path.dirname(REPORT))
    try:
        import report
    finally:
        sys.path.pop(0)
    import oar

    _, rows = report.survey()
    top = dict((sub, missing) for sub, _, _, missing in rows)[""]
    assert "to_tensor" not in top
    monkeypatch.delattr(oar, "to_tensor")
    _, rows = report.survey()
    assert "to_tensor" in dict((sub, missing) for sub, _, _, missing in rows)[""]
