"""The PostgreSQL engine: the same ledger on the database LangGraph deployments run."""
