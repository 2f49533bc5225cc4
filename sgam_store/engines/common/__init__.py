"""Statements both engines run word for word, written once with `?` placeholders and a
`Dialect` for the few fragments that differ; each engine's modules bind them with `export`."""
