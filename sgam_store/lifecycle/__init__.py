"""Lifecycle: retention, erasure, schema backfill and file statistics."""
