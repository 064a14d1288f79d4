"""CoDA `agents` package (see DESIGN.md §2)."""
