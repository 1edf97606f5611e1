"""RoPE rows of `make bench`: posenc against transformers' own rotary code (torch, CPU).

    python benchmarks/rotary.py            # the RoPE section alone
    python benchmarks/rotary.py --quick

- apply: ``posenc.torch.apply_rotary`` on q and k against transformers'
  ``apply_rotary_pos_emb(q, k, cos, sin)``, same tensors, the same bits (target: <= 1.0x, issue 27).
- cos/sin: ``posenc.torch.rotary_cos_sin`` for a batch of position ids against
  ``LlamaRotaryEmbedding.forward`` (float32 ``inv_freq * position_ids``, cos, sin; target <= 1.5x).
- error: max |cos - exact| over all frequencies at long positions (mpmath), for
  transformers' float32 route, the bf16 route (``inv_freq`` rounded to bfloat16, as
  ``model.to(torch.bfloat16)`` does to the buffer, output in bfloat16) and posenc.
Times are medians of round-robin repeats: compare ratios within one run.
"""


import mpmath
import numpy as np
import timing
from timing import time_all

HEAD_DIM = 128
BASE = 10000.0
POSITIONS = (1_000, 10_000, 100_000, 1_000_000)


def llama_rotary(head_dim):
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    config = LlamaConfig(hidden_size=4 * head_dim, num_attention_heads=4, rope_parameters={"rope_type": "default", "rope_theta": BASE})
    return LlamaRotaryEmbedding(config)


def speed_rows(quick, repeats):
    import torch
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    import posenc.torch as pt

    batch, heads, seq, head_dim = (1, 4, 64, 64) if quick else (1, 32, 1024, HEAD_DIM)
    torch.manual_seed(0)
    rows = []
    for dtype in (torch.float32, torch.bfloat16):
        q, k = torch.randn(2, batch, heads, seq, head_dim, dtype=dtype)
        cos, sin = pt.rotary_cos_sin(torch.arange(seq)[None].expand(batch, seq), head_dim, dtype=dtype)
        c, s = cos[:, None], sin[:, None]
        times = time_all({
            "transformers": lambda: apply_rotary_pos_emb(q, k, cos, sin),
            "posenc": lambda: (pt.apply_rotary(q, c, s), pt.apply_rotary(k, c, s)),
        }, repeats)
        rows.append({"what": f"apply q,k {tuple(q.shape)} {str(dtype)[6:]}", "transformers_ms": 1e3 * times["transformers"],
                     "posenc_ms": 1e3 * times["posenc"], "ratio": times["posenc"] / times["transformers"], "target": 1.0})

    ids_batch, ids_seq = (2, 64) if quick else (4, 4096)
    position_ids = torch.arange(ids_batch * ids_seq).reshape(ids_batch, ids_seq)
    theirs, ours = llama_rotary(HEAD_DIM), pt.RotaryEmbedding(HEAD_DIM, BASE)
    x = torch.zeros(1)
    times = time_all({
        "transformers": lambda: theirs(x, position_ids),
        "posenc": lambda: pt.rotary_cos_sin(position_ids, HEAD_DIM, base=BASE),
        "posenc module": lambda: ours(x, position_ids),
    }, repeats)
    for name in ("posenc", "posenc module"):
        rows.append({"what": f"cos/sin {name} ids {tuple(position_ids.shape)} d={HEAD_DIM}", "transformers_ms": 1e3 * times["transformers"],
                     "posenc_ms": 1e3 * times[name], "ratio": times[name] / times["transformers"], "target": 1.5})
    return rows


def exact_cos(positions, head_dim):
    with mpmath.workdps(40):
        w = [mpmath.power(BASE, -mpmath.mpf(2 * j) / head_dim) for j in range(head_dim // 2)]
        return np.array([[float(mpmath.cos(mpmath.mpf(p) * x)) for x in w] for p in positions])


def error_rows(quick):
    import torch

    import posenc.torch as pt

    positions = POSITIONS[::2] if quick else POSITIONS
    exact = exact_cos(positions, HEAD_DIM)
    position_ids = torch.tensor(positions)[None]
    rope = llama_rotary(HEAD_DIM)
    half = HEAD_DIM // 2

    def worst(cos):
        return np.abs(cos[0, :, :half].double().numpy() - exact).max(axis=-1)

    float32_route = rope(torch.zeros(1), position_ids)[0]
    rope_bf16 = llama_rotary(HEAD_DIM).to(torch.bfloat16)  # rounds the inv_freq buffer
    bf16_route = rope_bf16(torch.zeros(1, dtype=torch.bfloat16), position_ids)[0]
    routes = {
        "transformers float32": float32_route,
        "transformers bf16 (inv_freq in bf16)": bf16_route,
        "posenc float32": pt.rotary_cos_sin(position_ids, HEAD_DIM, dtype=torch.float32)[0],
        "posenc bfloat16": pt.rotary_cos_sin(position_ids, HEAD_DIM, dtype=torch.bfloat16)[0],
    }
    return positions, {name: worst(cos) for name, cos in routes.items()}


def run(quick=False, repeats=15):
    """Print the RoPE tables; return them as a dict for results.json."""
    if quick:
        repeats = 3
    rows = speed_rows(quick, repeats)
    print("\nRoPE, torch (posenc / transformers, median times; targets: apply <= 1.0x, cos/sin <= 1.5x)")
    print(f"{'what':<52} {'transformers ms':>16} {'posenc ms':>10} {'ratio':>6} {'target':>7}")
    for row in rows:
        print(f"{row['what']:<52} {row['transformers_ms']:>16.3f} {row['posenc_ms']:>10.3f} {row['ratio']:>6.2f} {row['target']:>7.1f}")
    positions, errors = error_rows(quick)
    print(f"\nRoPE cos error at long positions (max over {HEAD_DIM // 2} frequencies, against mpmath)")
    print(f"{'route':<40}" + "".join(f"{p:>11}" for p in positions))
    for name, values in errors.items():
        print(f"{name:<40}" + "".join(f"{v:>11.2e}" for v in values))
    return {"speed": rows, "error_positions": list(positions), "errors": {k: v.tolist() for k, v in errors.items()}}


if __name__ == "__main__":
    timing.main(run, __doc__)
