"""The LIBERO / LIBERO-Pro protocol: LIBERO-Pro's own suites, init states and BDDL instructions, evaluated
apart from the loop (which never reads them; its held-out scenes are its own family's).

    python -m experiments.liberopro ...     # = python -m experiments.liberopro.evaluate: a policy (or the
                                            # scripted expert) on a suite under a perturbation
    evaluate.py   tasks, init states, episodes, success per task (spawned workers)
    run.py        each round's policy of an `agents.run --preset libero` run under the protocol
    table.py      docs/results/liberopro.md from the committed evaluation files
    sft.py        a policy trained on the scripted expert's demonstrations of a suite (DART noise optional)
"""
