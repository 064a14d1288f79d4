"""CoDA's experiment harnesses, apart from the product: what the results in docs/results are measured with.

    experiments/table/       Table 1: every method at equal budget on the frozen suites (`python -m
                             experiments.table`), its ablations, plots and power
    experiments/liberopro/   the LIBERO / LIBERO-Pro protocol (`python -m experiments.liberopro`), a loop
                             run's rounds under it, its table, a standalone SFT on the expert's demonstrations

Results go to runs/results unless `--results`/`--out` names a place (docs/results for the committed ones).
One-off studies, each answering a FINDINGS entry, are in studies/; measurement tools in bench/.
"""
