"""CoDA `memory` package (see DESIGN.md §2)."""
