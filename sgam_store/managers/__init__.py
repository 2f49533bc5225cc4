"""Memory managers built on the store's public API: extraction and consolidation."""
