"""What a run's files say: its bundle turned into metrics (bundle.py), the seconds before and after
the crash (seconds.py), and the bounds any unpacking of an upload or a bundle obeys
(unpacking.py). Reads only; the services store what it finds. The parsers of the server's files
are a package of their own (experiments/parsers)."""
