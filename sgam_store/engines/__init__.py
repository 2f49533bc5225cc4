"""Database engines: where SQL and a database's own features live."""
