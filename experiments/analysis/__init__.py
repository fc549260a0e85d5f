"""What the runs say together: statistics (stats.py), cells of runs with the same settings
(cells.py), comparisons between experiments and engines (compare.py), any metric against any
parameter (explore.py) and the recovery-time planner (planner.py). The numbers are plain Python;
each question's one reader of the database sits at the end of its module."""
