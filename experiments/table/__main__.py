"""`python -m experiments.table`: Table 1 (`experiments.table.table1`)."""

from experiments.table.table1 import main

if __name__ == "__main__":
    raise SystemExit(main())
