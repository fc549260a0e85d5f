"""Reports for a reader who will not open the dashboard: the findings, caveats and method written
out (findings.py), and a report page printed to PDF by Chromium (pdf.py)."""
