"""The REST API (docs/design.md, "Commands and API that scripts rely on"), one module per resource:
experiments.py, runs.py, hosts.py, imports.py, and analysis.py (explore, compare, planner); the
routes are in urls.py, CSV answers in csv.py."""
