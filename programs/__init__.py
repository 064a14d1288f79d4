"""CoDA programs (DESIGN §3–§4): generation programs (Python that builds `SceneSpec`s from factor
values), training programs (subgoal expressions compiled by Text2potential into a staged potential),
the seed library, factor edits, static checks, and rendering to readable files.

Names load on first use (like `sim`), so `import programs` stays cheap; most of them pull in MuJoCo
through `sim.world`.
"""

from __future__ import annotations

from common.lazy import lazy_exports

_LAZY = {
    "GenerationProgram": "programs.model", "TrainingProgram": "programs.model", "Subgoal": "programs.model",
    "program_from_dict": "programs.model",
    "ExprError": "programs.expr", "parse_expr": ("programs.expr", "parse"), "compile_expr": "programs.expr",
    "Potential": "programs.potential", "PotentialError": "programs.potential",
    "compile_potential": "programs.potential", "agreement": "programs.potential",
    "agreement_report": "programs.potential", "AgreementReport": "programs.potential",
    "Evidence": "programs.refine", "refine": "programs.refine",
    "edit": "programs.edits", "edit_many": "programs.edits",
    "ProgramError": "programs.checks", "ProgramCheckError": "programs.checks",
    "check_program": "programs.checks", "check_generation": "programs.checks",
    "check_training": "programs.checks", "assert_valid": "programs.checks",
    "render": "programs.render", "write_program": "programs.render", "load_program": "programs.render",
    "seed_library": "programs.seeds",
    "ProgramRejected": "programs.errors",
    **dict.fromkeys(("kind_of", "hard_side", "family_factor", "reference", "reference_schema",
                     "resolve_factor", "bounds", "allowed_choices", "movable", "check_value", "band_edit",
                     "side_edit", "back_off", "magnitude", "matched_edit", "variant_sides", "variant_edit",
                     "widened_range"),
                    "programs.factor_space"),
    "generation_from_source": "programs.source", "training_from_source": "programs.source",
    "training_from_toml": "programs.source",
}

__all__, __getattr__ = lazy_exports(__name__, _LAZY)
