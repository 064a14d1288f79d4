"""The Gemma that π0.5 needs, on the transformers that PyPI ships.

lerobot 0.4.4's PI05 (like openpi's PyTorch port it follows) runs Gemma layers whose RMS norms are
*adaptive* (adaRMS: the flow-matching time embedding modulates scale, shift and a residual gate in the action
expert), whose attention can read a prefix's keys/values without appending to them, and whose image tokens
enter the language model unscaled. Upstream ships those as replacement files copied over an installed
transformers 4.53 ("transformers_replace"), or a transformers fork named in lerobot's git extras; neither
installs from PyPI, and PI05 refuses to build without them ("An incorrect transformer version is used").

`install()` gives transformers 4.57's Gemma the same behaviour at import time, in this process only, with
our own code (no installed file changes):
- every Gemma RMS norm returns `(normed, gate)` and takes `cond=`; a layer of a config with `use_adarms`
  gets `dense: Linear(cond_dim, 3·width)` (zero-initialised) instead of `weight` — the parameter names of
  released π0.5 checkpoints (lerobot's `_fix_pytorch_state_dict_keys` maps `.weight` → `.dense`);
- `modeling_gemma._gated_residual(x, y, gate) = x + y·gate` (or `x + y` without a gate);
- `GemmaModel.forward(..., adarms_cond=)` runs the layers with a 4-D additive mask, returns per-layer
  `(keys, values)` as its cache when `use_cache`, and with a cache given and `use_cache=False` attends to
  cache + new tokens without storing them (the denoising steps of `sample_actions`); no √width
  normaliser: lerobot scales language embeddings itself, and the joint training path
  (`compute_layer_complete`) has none — `tests/coda_policy/test_pi05.py` checks that the cached inference path
  and the joint path give the same action-expert output;
- `PaliGemmaModel.get_image_features` does not divide by √width (openpi's JAX model feeds SigLIP tokens as
  they are; not checked against a released checkpoint here — none can be downloaded);
- `transformers.models.siglip.check.check_whether_transformers_replace_is_installed_correctly()` exists
  and answers whether this patch is in place.
"""

from __future__ import annotations

import sys
import types
from typing import Any

import torch
from torch import nn

_INSTALLED = False


class AdaptiveNorm(nn.Module):  # not "...RMSNorm": transformers' _init_weights would reach for .weight
    """Gemma's RMS norm `x̂·(1 + weight)`, or with `cond_dim`: `x̂·(1 + scale) + shift` and a residual
    gate, `(scale, shift, gate) = dense(cond)`. Always returns `(normed, gate or None)`."""

    def __init__(self, dim: int, eps: float = 1e-6, cond_dim: int | None = None) -> None:
        super().__init__()
        self.eps, self.dim, self.cond_dim = eps, dim, cond_dim
        if cond_dim is None:
            self.weight = nn.Parameter(torch.zeros(dim))
            self.dense = None
        else:
            self.dense = nn.Linear(cond_dim, 3 * dim)
            nn.init.zeros_(self.dense.weight)

    def forward(self, x: torch.Tensor, cond: torch.Tensor | None = None) -> tuple[torch.Tensor, Any]:
        dtype = x.dtype
        xf = x.float()
        normed = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        if self.dense is None:
            if cond is not None:
                raise ValueError("adaRMS condition given to a norm built without cond_dim")
            return (normed * (1.0 + self.weight.float())).to(dtype), None
        if cond is None:
            raise ValueError("this adaRMS norm needs its condition (cond=)")
        mod = self.dense(cond)
        if x.dim() == 3:
            mod = mod[:, None]
        scale, shift, gate = mod.chunk(3, dim=-1)
        return (normed * (1.0 + scale.float()) + shift.float()).to(dtype), gate.to(dtype)

    def extra_repr(self) -> str:
        return f"{self.dim}, eps={self.eps}, cond_dim={self.cond_dim}"


def gated_residual(x: torch.Tensor | None, y: torch.Tensor | None, gate: torch.Tensor | None) -> Any:
    if x is None or y is None:
        return y if x is None else x
    return x + y if gate is None else x + y * gate


def _norm_for(config: Any) -> AdaptiveNorm:
    adaptive = bool(getattr(config, "use_adarms", False))
    return AdaptiveNorm(config.hidden_size, eps=config.rms_norm_eps,
                           cond_dim=config.adarms_cond_dim if adaptive else None)


def _layer_forward(mg: Any, layer: Any, h: torch.Tensor, mask: torch.Tensor, rope: Any,
                   cached: tuple[torch.Tensor, torch.Tensor] | None, cond: Any
                   ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
    attn = layer.self_attn
    normed, gate = layer.input_layernorm(h, cond=cond)
    shape = (*normed.shape[:-1], -1, attn.head_dim)
    q = attn.q_proj(normed).view(shape).transpose(1, 2)
    k = attn.k_proj(normed).view(shape).transpose(1, 2)
    v = attn.v_proj(normed).view(shape).transpose(1, 2)
    q, k = mg.apply_rotary_pos_emb(q, k, *rope, unsqueeze_dim=1)
    new_kv = (k, v)
    if cached is not None:  # the prefix's keys and values, read, never extended
        k, v = torch.cat([cached[0], k], dim=2), torch.cat([cached[1], v], dim=2)
    out, _ = mg.eager_attention_forward(attn, q, k, v, mask, attn.scaling)
    out = attn.o_proj(out.reshape(*normed.shape[:-1], -1).to(attn.o_proj.weight.dtype))
    h = gated_residual(h, out, gate)
    normed, gate = layer.post_attention_layernorm(h, cond=cond)
    return gated_residual(h, layer.mlp(normed), gate), new_kv


def install() -> None:
    """Patch transformers' Gemma/PaliGemma classes as the module docstring says (idempotent)."""
    global _INSTALLED
    if _INSTALLED:
        return
    import transformers.models.siglip as siglip
    from transformers.modeling_outputs import BaseModelOutputWithPast
    from transformers.models.gemma import modeling_gemma as mg
    from transformers.models.paligemma import modeling_paligemma as mp

    layer_init, model_init = mg.GemmaDecoderLayer.__init__, mg.GemmaModel.__init__

    def decoder_layer_init(self: Any, config: Any, layer_idx: int) -> None:
        layer_init(self, config, layer_idx)
        self.input_layernorm, self.post_attention_layernorm = _norm_for(config), _norm_for(config)

    def model_init_(self: Any, config: Any) -> None:
        model_init(self, config)
        self.norm = _norm_for(config)

    def model_forward(self: Any, input_ids: Any = None, attention_mask: Any = None, position_ids: Any = None,
                      past_key_values: Any = None, inputs_embeds: Any = None, use_cache: Any = None,
                      adarms_cond: Any = None, **_: Any) -> Any:
        h = self.embed_tokens(input_ids) if inputs_embeds is None else inputs_embeds
        if attention_mask is None or attention_mask.dim() != 4 or position_ids is None:
            raise ValueError("this Gemma (coda_policy.pi05.gemma_adarms) takes a 4-D additive attention mask "
                             "and position_ids, as PI05 passes them")
        rope = self.rotary_emb(h, position_ids)
        cache = []
        for i, layer in enumerate(self.layers[: self.config.num_hidden_layers]):
            h, kv = _layer_forward(mg, layer, h, attention_mask, rope,
                                   None if past_key_values is None else past_key_values[i], adarms_cond)
            cache.append(kv)
        h, _ = self.norm(h, cond=adarms_cond)
        return BaseModelOutputWithPast(last_hidden_state=h,
                                       past_key_values=tuple(cache) if use_cache else None)

    def image_features(self: Any, pixel_values: torch.Tensor) -> torch.Tensor:
        return self.multi_modal_projector(self.vision_tower(pixel_values).last_hidden_state)

    mg.GemmaDecoderLayer.__init__ = decoder_layer_init
    mg.GemmaModel.__init__ = model_init_
    mg.GemmaModel.forward = model_forward
    mg._gated_residual = gated_residual
    mp.PaliGemmaModel.get_image_features = image_features
    check = types.ModuleType("transformers.models.siglip.check")
    check.check_whether_transformers_replace_is_installed_correctly = lambda: _INSTALLED
    sys.modules[check.__name__] = check
    siglip.check = check
    _INSTALLED = True
