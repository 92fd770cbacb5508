"""Two small decoder-only transformers whose norm layers are pluggable, for end-to-end checks.

* ``llama``: pre-norm RMSNorm blocks, rotary positions, SwiGLU MLP, no biases.
* ``gpt``: pre-norm LayerNorm (with bias) blocks, learned positions, GELU MLP, biases.

Both use ``F.scaled_dot_product_attention`` (causal) and take an optional KV cache for decoding.
Every norm is built by a *norm factory*, called as ``factory(normalized_shape, eps=..., device=...,
dtype=...)``: ``torch.nn.RMSNorm`` / ``torch.nn.LayerNorm`` or ``reference_ops.RMSNorm`` /
``reference_ops.LayerNorm``, which take the same arguments and have the same state_dict keys, so a
model built with one loads a checkpoint of the other. The "fused" implementation builds
``reference_ops.AddRMSNorm`` / ``AddLayerNorm`` (same parameters): each block's residual add then
runs inside the next norm (``y, stream = norm(sublayer_output, stream)``).

Shapes are static for a given call pattern (the cache always has its full length and a boolean
mask hides the positions not written yet; positions are a tensor), so ``torch.compile`` compiles
a prefill and a decode step once each.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F
from torch import Tensor, nn

NormFactory = Callable[..., nn.Module]


@dataclass(frozen=True)
class Config:
    arch: str  # "llama" or "gpt"
    vocab: int
    d_model: int
    n_layers: int
    n_heads: int
    d_ff: int
    max_seq: int
    eps: float = 1e-5

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads


# "small" runs in seconds anywhere with a GPU; "large" has the hidden size of a 7B LLaMA with
# few layers, so it fits and runs in seconds on one H100; "tiny" is the CPU smoke test's.
SIZES = {
    "tiny": dict(vocab=256, d_model=64, n_layers=2, n_heads=4, d_ff=176, max_seq=64),
    "small": dict(vocab=32000, d_model=512, n_layers=4, n_heads=8, d_ff=1376, max_seq=1024),
    "large": dict(vocab=16384, d_model=4096, n_layers=2, n_heads=32, d_ff=11008, max_seq=1024),
}


def config(arch: str, size: str) -> Config:
    if arch not in ("llama", "gpt"):
        raise ValueError(f"unknown arch {arch!r}: llama or gpt")
    cfg = Config(arch=arch, **SIZES[size])
    # GPT-style blocks use the classic 4x MLP; LLaMA's SwiGLU the ~8/3x one of the table.
    return replace(cfg, d_ff=4 * cfg.d_model) if arch == "gpt" else cfg


def norm_factory(kind: str, impl: str) -> NormFactory:
    """``kind``: "rms" or "layer"; ``impl``: "torch" (torch.nn), "ours" (reference_ops) or "fused"
    (reference_ops' fused residual add + norm)."""
    if impl == "torch":
        return {"rms": nn.RMSNorm, "layer": nn.LayerNorm}[kind]
    if impl == "ours":
        import reference_ops

        return {"rms": reference_ops.RMSNorm, "layer": reference_ops.LayerNorm}[kind]
    if impl == "fused":
        import reference_ops

        return {"rms": reference_ops.AddRMSNorm, "layer": reference_ops.AddLayerNorm}[kind]
    raise ValueError(f"unknown norm implementation {impl!r}: torch, ours or fused")


def norm_kind(arch: str) -> str:
    return "rms" if arch == "llama" else "layer"


class KVCache:
    """Per layer, keys and values of shape (batch, heads, max_seq, head_dim), written in place."""

    def __init__(self, cfg: Config, batch: int, device, dtype, static: bool = False) -> None:
        shape = (batch, cfg.n_heads, cfg.max_seq, cfg.head_dim)
        self.layers: list[tuple[Tensor, Tensor]] = [
            (torch.zeros(shape, device=device, dtype=dtype), torch.zeros(shape, device=device, dtype=dtype))
            for _ in range(cfg.n_layers)
        ]
        if static:
            # For torch.compile's CUDA graphs: a cache at a fixed address may be updated in place
            # inside a graph (an input updated in place otherwise makes inductor run without graphs).
            for k, v in self.layers:
                torch._dynamo.mark_static_address(k)
                torch._dynamo.mark_static_address(v)


def rotary(positions: Tensor, head_dim: int) -> tuple[Tensor, Tensor]:
    """cos and sin of the rotation angles, (T, head_dim / 2), float32 whatever the model's dtype."""
    half = head_dim // 2
    inv_freq = 1.0 / (10000.0 ** (torch.arange(half, dtype=torch.float32, device=positions.device) / half))
    angles = positions.float()[:, None] * inv_freq[None, :]
    return angles.cos(), angles.sin()


def apply_rotary(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """x: (batch, heads, T, head_dim)."""
    x1, x2 = x.float().chunk(2, dim=-1)
    out = torch.cat((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)
    return out.to(x.dtype)


class Attention(nn.Module):
    def __init__(self, cfg: Config, bias: bool) -> None:
        super().__init__()
        self.cfg = cfg
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model, bias=bias)
        self.out = nn.Linear(cfg.d_model, cfg.d_model, bias=bias)

    def forward(
        self,
        x: Tensor,
        positions: Tensor,
        rot: tuple[Tensor, Tensor] | None,
        cache: tuple[Tensor, Tensor] | None,
    ) -> Tensor:
        b, t, _ = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.cfg.n_heads, self.cfg.head_dim).permute(2, 0, 3, 1, 4)
        if rot is not None:
            q, k = apply_rotary(q, *rot), apply_rotary(k, *rot)
        if cache is None:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            k_cache, v_cache = cache
            k_cache.index_copy_(2, positions, k.to(k_cache.dtype))
            v_cache.index_copy_(2, positions, v.to(v_cache.dtype))
            # Static shapes: attend over the whole cache, hiding later (and unwritten) positions.
            keys = torch.arange(k_cache.shape[2], device=x.device)
            mask = keys[None, :] <= positions[:, None]
            y = F.scaled_dot_product_attention(q, k_cache.to(q.dtype), v_cache.to(q.dtype), attn_mask=mask)
        return self.out(y.transpose(1, 2).reshape(b, t, self.cfg.d_model))


class SwiGLU(nn.Module):
    def __init__(self, cfg: Config) -> None:
        super().__init__()
        self.gate_up = nn.Linear(cfg.d_model, 2 * cfg.d_ff, bias=False)
        self.down = nn.Linear(cfg.d_ff, cfg.d_model, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        gate, up = self.gate_up(x).chunk(2, dim=-1)
        return self.down(F.silu(gate) * up)


class GeluMLP(nn.Module):
    def __init__(self, cfg: Config) -> None:
        super().__init__()
        self.fc = nn.Linear(cfg.d_model, cfg.d_ff)
        self.proj = nn.Linear(cfg.d_ff, cfg.d_model)

    def forward(self, x: Tensor) -> Tensor:
        return self.proj(F.gelu(self.fc(x), approximate="tanh"))


class Block(nn.Module):
    def __init__(self, cfg: Config, norm: NormFactory, factory: dict) -> None:
        # Built under a torch.device context; the norms are also given device and dtype, as a
        # model passes them to torch.nn's norms.
        super().__init__()
        llama = cfg.arch == "llama"
        self.attn_norm = norm(cfg.d_model, eps=cfg.eps, **factory)
        self.attn = Attention(cfg, bias=not llama)
        self.mlp_norm = norm(cfg.d_model, eps=cfg.eps, **factory)
        self.mlp = SwiGLU(cfg) if llama else GeluMLP(cfg)

    def forward(self, x, positions, rot, cache):
        x = x + self.attn(self.attn_norm(x), positions, rot, cache)
        return x + self.mlp(self.mlp_norm(x))

    def forward_fused(self, delta, stream, positions, rot, cache):
        """The same block with fused residual norms: the block's input is stream + delta (stream
        None: delta alone); returns the MLP's output and the stream it is to be added to."""
        y, stream = self.attn_norm(delta, stream)
        y, stream = self.mlp_norm(self.attn(y, positions, rot, cache), stream)
        return self.mlp(y), stream


class Decoder(nn.Module):
    """Token ids (batch, T) -> logits (batch, T, vocab)."""

    def __init__(self, cfg: Config, norm: NormFactory, device=None, dtype=None) -> None:
        super().__init__()
        self.cfg = cfg
        factory = {"device": device, "dtype": dtype}
        with torch.device(device or "cpu"):
            self.embed = nn.Embedding(cfg.vocab, cfg.d_model)
            # GPT: learned positions; LLaMA: rotary (computed from the positions, no parameters).
            self.pos_embed = nn.Embedding(cfg.max_seq, cfg.d_model) if cfg.arch == "gpt" else None
            self.blocks = nn.ModuleList(Block(cfg, norm, factory) for _ in range(cfg.n_layers))
            self.final_norm = norm(cfg.d_model, eps=cfg.eps, **factory)
            self.head = nn.Linear(cfg.d_model, cfg.vocab, bias=False)
        # Norms that take (x, residual) and return (norm(x + residual), x + residual).
        self.fused = getattr(norm, "fused_residual", False)
        self.reset_parameters()
        if dtype is not None:
            self.to(dtype)

    def reset_parameters(self) -> None:
        std = 0.02
        for name, p in self.named_parameters():
            if "norm" in name:
                continue  # norms keep their own init (weight 1, bias 0)
            if p.dim() >= 2:
                residual = name.endswith(("out.weight", "down.weight", "proj.weight"))
                nn.init.normal_(p, std=std / math.sqrt(2 * self.cfg.n_layers) if residual else std)
            else:
                nn.init.zeros_(p)

    def forward(self, tokens: Tensor, positions: Tensor | None = None, cache: KVCache | None = None) -> Tensor:
        if positions is None:
            positions = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.embed(tokens)
        if self.pos_embed is not None:
            x = x + self.pos_embed(positions)
        rot = rotary(positions, self.cfg.head_dim) if self.cfg.arch == "llama" else None
        if self.fused:
            stream = None
            for i, block in enumerate(self.blocks):
                x, stream = block.forward_fused(x, stream, positions, rot, None if cache is None else cache.layers[i])
            return self.head(self.final_norm(x, stream)[0])
        for i, block in enumerate(self.blocks):
            x = block(x, positions, rot, None if cache is None else cache.layers[i])
        return self.head(self.final_norm(x))


def build(arch: str, size: str, impl: str, device=None, dtype=None, seed: int = 0) -> Decoder:
    """A model of ``arch`` and ``size`` whose norms are ``impl``'s; the same seed gives the same
    weights whatever the norm implementation."""
    cfg = config(arch, size)
    torch.manual_seed(seed)
    return Decoder(cfg, norm_factory(norm_kind(arch), impl), device=device, dtype=dtype)


def norm_parameters(model: nn.Module) -> dict:
    """{name: parameter} of every norm layer of the model."""
    return {name: p for name, p in model.named_parameters() if "norm" in name}
