"""CoDA `coda_policy` package (see DESIGN.md §2)."""
