"""The π0.5 backend, "pi05": lerobot 0.4.4's PI05 behind `coda_policy.registry`.

`configuration_pi05` (the config, registered by name) needs only the default install; everything else here
imports lerobot and transformers, which live in the optional environment `make setup-pi05` builds
(.venv-pi05). Modules: `gemma_adarms` (the Gemma behaviour PI05 needs, on PyPI's transformers), `tiny` (a
CPU-sized backbone and a byte tokenizer), `modeling_pi05` (`Pi05Policy`), `data` (training samples with
replayed camera frames). (torch's CUDA build brings triton, which must load before a Mesa GL context:
`sim.render` sees to that.)
"""
