"""One-off studies, apart from the product: each answers one question of docs/results/FINDINGS.md (its
docstring names the entry), runs from the command line (`python -m studies.<name> --help`) and writes under
runs/ unless told otherwise. Nothing in the product imports them; the loop never reads what they write.

    update_dev        #11  the policy updates compared on development scenes
    ceiling           #5   an oracle generator at Table 1's budget
    bootstrap_cost    #34  a table's bootstrap trained again from nothing and timed
    critic_rank       #25  whether the weighted update's critic ranks a round's own rollouts
    critic_replay     #2   re-diagnose and re-verify a finished run
    reverify          #16  a run's recorded diagnoses verified again under another rule
    scene_coverage    #26  how far out of distribution each cell's training scenes were
    aw_round          #9   one advantage-weighted round in isolation
    libero_loop_sft   #35  the loop's LIBERO bootstrap, varied, on development scenes
    libero_layouts    #36  its demonstrations' start layouts varied
    libero_approach   #39  which object a LIBERO policy's hand goes to
    libero_round_dev  #41  a LIBERO round's update redone at other settings
    libero_speed      –    robosuite's LIBERO beside our MuJoCo backend, steps per second (docs/libero.md)
"""
