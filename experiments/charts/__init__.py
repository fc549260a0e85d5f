"""Plotly figure dicts, one module per page: experiment.py, run.py, explore.py, compare.py,
planner.py; what they share in layout.py. Pages embed them with json_script or receive them from
a JSON endpoint; no chart logic lives in templates or scripts."""
