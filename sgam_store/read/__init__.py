"""The read path: searches as a pipeline (`pipeline`), gets and listings, indexing, recall."""
