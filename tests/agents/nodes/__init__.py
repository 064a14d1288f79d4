"""Node-level tests: each node of the round called directly on fakes (state in, partial update out)."""
