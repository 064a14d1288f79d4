"""CoDA `experiments` package (see DESIGN.md §2)."""
