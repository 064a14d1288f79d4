"""The Table 1 harness: every method at equal budget on the frozen suites, each (method, seed) cell an
ordinary run directory, evaluated and recorded.

    python -m experiments.table --preset smoke          # = python -m experiments.table.table1
    presets.py     the table's sizes (`TABLES`)
    cells.py       one cell: config, shared bootstrap, run, suite evaluation, record
    table1.py      the table: cells one after another (or on Ray, ray_cells.py), then its page
    record.py      a cell's record and provenance; where results go (runs/results unless --results)
    stats.py       the table as numbers and Markdown; plots.py its plots and HTML page
    fork.py        a table that extends another with more rounds
    suites.py      the frozen evaluation suites (the scene files under suites/)
    ablations.py   the Text2potential ablations; power.py, table_power.py what the tests and the table resolve
"""
