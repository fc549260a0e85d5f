"""recovery-lab, the command line: run, compare, gate, predict and the exporter, against a
dashboard's REST API and a live server. What a CI job or a database host installs, on its own
(cli/pyproject.toml): no Django. The dashboard uses its domain parts too (units, prediction,
the live readers); it uses nothing of the dashboard's."""
