"""PostgreSQL's family: postgres, whose one engine is its own heap and WAL. engines.py: the engine;
server.py: the private cluster."""
