"""The read path: filters and search, indexing, the vector mirror, ranking, cited recall."""
