"""The SQLite engine (the embedded default): connection, migrations, transactions."""
