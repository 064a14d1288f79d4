"""The LIBERO / LIBERO-Pro protocol: LIBERO-Pro's own suites, init states and BDDL instructions, evaluated
apart from the loop (which never reads them; its held-out scenes are its own family's).

    python -m experiments.liberopro ...     # a policy (or the scripted expert) on a suite under a
                                            # perturbation, 50 episodes per task (`__main__.py`)
    evaluate.py   tasks, init states, episodes, success per task (spawned workers)
    records.py    an evaluation's per-task records: written as each task lands, a killed one resumes
    run.py        each round's policy of an `agents.run --preset libero` run under the protocol
    table.py      docs/results/liberopro.md from the committed evaluation files
    sft.py        a policy trained on the scripted expert's demonstrations of a suite (DART noise optional)
    starts.py     the starts the protocol evaluates from, and whether a training start equals one
"""
