"""`python -m experiments.liberopro`: the protocol's evaluation (`experiments.liberopro.evaluate`)."""

from experiments.liberopro.evaluate import main

if __name__ == "__main__":
    raise SystemExit(main())
