"""The HTML pages, one module per area: experiments.py, runs.py, hosts.py, imports.py and
analysis.py (explore, compare, planner); what the experiment, run and report pages show is
assembled in context.py, the forms are in forms.py. Thin: they read rows and call services."""
