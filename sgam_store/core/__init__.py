"""The bottom layer: errors, time, namespaces and the typed records every layer shares."""
