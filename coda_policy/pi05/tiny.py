"""A π0.5 small enough for the CPU, and a tokenizer that needs no download.

`backbone(size)` is where PI05Pytorch builds its PaliGemma + action expert: "full" is lerobot's own
(gemma_2b + gemma_300m + SigLIP-So400m at 224 px, ~3.3 B parameters, the shapes of released π0.5
checkpoints); "tiny" keeps every line of lerobot's PI05 model (prefix/suffix attention, adaRMS time
conditioning, flow matching, the KV-cached sampler) with two layers of width 64 / 32, a one-layer SigLIP on
32-px images and a vocabulary the size of the byte tokenizer below (~0.15 M parameters): it proves the
plumbing (shapes, weighted losses, save/load) and nothing about π0.5's skill. lerobot's PI05 concatenates
8 attention heads in its joint layer, so the tiny widths keep 8 heads (of size 8).

`byte_tokenizer()` stands in for PaliGemma's gated tokenizer: one token per UTF-8 byte plus
<pad>/<eos>/<bos>/<unk>, as a transformers `PreTrainedTokenizerFast` that saves and loads from a folder.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from torch import nn

TINY_VLM = {"width": 64, "depth": 2, "mlp_dim": 128, "num_heads": 8, "num_kv_heads": 1, "head_dim": 8}
TINY_EXPERT = {"width": 32, "depth": 2, "mlp_dim": 64, "num_heads": 8, "num_kv_heads": 1, "head_dim": 8}
TINY_VISION = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2,
               "patch_size": 8}
SPECIALS = ("<pad>", "<eos>", "<bos>", "<unk>")


def byte_tokenizer() -> Any:
    """One token per byte (ByteLevel alphabet) plus the four specials; no merges."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {s: i for i, s in enumerate(SPECIALS)}
    vocab.update({ch: len(SPECIALS) + i for i, ch in enumerate(sorted(alphabet))})
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>",
                                   bos_token="<bos>", unk_token="<unk>")


def _tiny_class(base: type, vocab_size: int) -> type:
    from transformers.models.auto import CONFIG_MAPPING
    from transformers.models.gemma.modeling_gemma import GemmaForCausalLM
    from transformers.models.paligemma.modeling_paligemma import PaliGemmaForConditionalGeneration

    class TinyPaliGemmaWithExpert(base):
        """lerobot's PaliGemmaWithExpertModel with small configs (its forward and helpers unchanged)."""

        def __init__(self, vlm_config: Any, action_expert_config: Any, use_adarms: Any = None,
                     precision: str = "float32", image_size: int = 32, freeze_vision_encoder: bool = False,
                     train_expert_only: bool = False) -> None:
            nn.Module.__init__(self)
            use_adarms = use_adarms or [False, False]
            self.freeze_vision_encoder, self.train_expert_only = freeze_vision_encoder, train_expert_only
            vlm = CONFIG_MAPPING["paligemma"]()
            vlm._vocab_size = vocab_size
            vlm.image_token_index = vocab_size - 1
            t = vlm.text_config
            t.hidden_size, t.intermediate_size = vlm_config.width, vlm_config.mlp_dim
            t.num_attention_heads, t.head_dim = vlm_config.num_heads, vlm_config.head_dim
            t.num_hidden_layers, t.num_key_value_heads = vlm_config.depth, vlm_config.num_kv_heads
            t.hidden_activation, t.vocab_size = "gelu_pytorch_tanh", vocab_size
            t.use_adarms, t.adarms_cond_dim = use_adarms[0], vlm_config.width if use_adarms[0] else None
            v = vlm.vision_config
            for key, value in TINY_VISION.items():
                setattr(v, key, value)
            v.image_size, v.projection_dim, v.projector_hidden_act = image_size, vlm_config.width, "gelu_fast"
            vlm.projection_dim = vlm_config.width
            expert = CONFIG_MAPPING["gemma"](
                head_dim=action_expert_config.head_dim, hidden_size=action_expert_config.width,
                intermediate_size=action_expert_config.mlp_dim,
                num_attention_heads=action_expert_config.num_heads,
                num_hidden_layers=action_expert_config.depth,
                num_key_value_heads=action_expert_config.num_kv_heads, vocab_size=vocab_size,
                hidden_activation="gelu_pytorch_tanh", use_adarms=use_adarms[1],
                adarms_cond_dim=action_expert_config.width if use_adarms[1] else None)
            self.paligemma = PaliGemmaForConditionalGeneration(config=vlm)
            self.gemma_expert = GemmaForCausalLM(config=expert)
            self.gemma_expert.model.embed_tokens = None
            self.to_bfloat16_for_selected_params(precision)
            self._set_requires_grad()

    return TinyPaliGemmaWithExpert


@contextmanager
def backbone(size: str, vocab_size: int) -> Iterator[None]:
    """Within the block, PI05Pytorch builds the `size` backbone ("full": lerobot's, unchanged)."""
    from lerobot.policies.pi05 import modeling_pi05 as m

    if size == "full":
        yield
        return
    if size != "tiny":
        raise ValueError(f"unknown π0.5 size {size!r}; known: tiny, full")
    saved = m.get_gemma_config, m.PaliGemmaWithExpertModel
    m.get_gemma_config = lambda variant: m.GemmaConfig(**(TINY_VLM if variant == "gemma_2b" else TINY_EXPERT))
    m.PaliGemmaWithExpertModel = _tiny_class(saved[1], vocab_size)
    try:
        yield
    finally:
        m.get_gemma_config, m.PaliGemmaWithExpertModel = saved
