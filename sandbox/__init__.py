"""CoDA `sandbox` package (see DESIGN.md §2)."""
