"""The write path: candidates, memory schemas, the write service and the fact writer."""
