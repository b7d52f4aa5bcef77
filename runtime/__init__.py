"""Process-level plumbing shared by worker.py, client.py, the demo and the
tests: connecting to Temporal and running the embedded dev server."""
