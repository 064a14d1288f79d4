"""CoDA `programs` package (see DESIGN.md §2)."""
