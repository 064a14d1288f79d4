"""`python -m experiments.table`: Table 1 (`experiments.table.table1`)."""

from experiments.table.table1 import main

raise SystemExit(main())
