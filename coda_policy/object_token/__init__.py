"""The default policy backend, "object_token": robot, instruction and object tokens → a transformer →
flow-matching action chunks. `configuration_object_token` (the config, registered by name; light),
`modeling_object_token` (`ObjectTokenPolicy`), and what only this backend reads: `features` (a state as
object tokens), `normalize` (its statistics, kept as buffers in the checkpoint) and `libero_features` (the
same tokens from a LIBERO environment's privileged state, `LiberoPolicy`)."""
