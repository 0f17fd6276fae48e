"""Throughput of the analytical cost model (issue 3 benchmark).

Prints microseconds per single design after ``jit`` (one design, the whole 11-point concurrency
sweep) and design-sweeps per second under ``vmap`` over 10^5 designs, on the flagship spec.
Also, for scale, a bare roofline of the same shape (weights / bandwidth vs FLOPs / peak per point).

    python benchmarks/bench_cost_model.py [--json] [--designs N] [--repeat R]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--designs", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--spec", default=str(ROOT / "specs" / "jalapeno-gpt-oss-120b.toml"))
    args = ap.parse_args()

    import jax
    import jax.numpy as jnp

    from codesign.pluginmanager import get_plugin_manager
    from codesign.spec import load_spec
    from codesign_analytical.model import AnalyticalModel, _compiled

    spec = load_spec(args.spec)
    formats = get_plugin_manager().number_formats
    m = AnalyticalModel()
    s = m.static(spec)
    fn = _compiled(s)  # jit(vmap(sweep)); efficiency knobs travel traced in the params
    n = args.designs
    rng = np.random.default_rng(0)
    overrides = {
        "memory.hbm.bandwidth": np.exp(rng.uniform(np.log(1e12), np.log(9.6e12), n)),
        "chip.peak_flops.fp4": np.exp(rng.uniform(np.log(1e15), np.log(2e16), n)),
        "memory.sram.capacity": rng.uniform(0, 2**30, n),
        "network.scaleup_bandwidth": np.exp(rng.uniform(np.log(1e11), np.log(3.6e12), n)),
        "deployment.tp": rng.choice([1.0, 2.0, 4.0, 8.0], n),
    }
    arrs, _ = m.arrays(spec, formats, overrides)
    arrs = {k: v for k, v in arrs.items() if not k.startswith("_")}  # drop non-array metadata
    batch = {k: jnp.asarray(v, dtype=jnp.float32) for k, v in arrs.items()}
    one = {k: v[:1] for k, v in batch.items()}

    def timeit(f, x):
        jax.block_until_ready(f(x))  # compile + warm
        best = float("inf")
        for _ in range(args.repeat):
            t = time.perf_counter()
            jax.block_until_ready(f(x))
            best = min(best, time.perf_counter() - t)
        return best

    single_s = timeit(fn, one)
    batch_s = timeit(fn, batch)

    # a bare roofline of the same shape: per point max(bytes/bw, flops/peak)
    conc = jnp.asarray(s.concurrency, dtype=jnp.float32)

    @jax.jit
    def bare(p):
        def one_design(p):
            t_mem = (p["w_bytes"] * 5e9 + conc * 1e8) / p["hbm_bw"]
            t_cmp = conc * 1e10 / p["peak"]
            return jnp.maximum(t_mem, t_cmp)
        return jax.vmap(one_design)(p)

    bare_s = timeit(bare, {k: batch[k] for k in ("w_bytes", "hbm_bw", "peak")})
    out = {
        "single_design_us": single_s * 1e6,
        "design_sweeps_per_s": n / batch_s,
        "bare_roofline_design_sweeps_per_s": n / bare_s,
        "designs": n,
        "concurrency_points": len(s.concurrency),
        "cpu_devices": len(jax.devices("cpu")),
    }
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"single design (jit, {len(s.concurrency)}-point sweep): {out['single_design_us']:.1f} us")
        print(f"vmap over {n:,} designs: {out['design_sweeps_per_s']:,.0f} design-sweeps/s")
        print(f"bare roofline, same shape: {out['bare_roofline_design_sweeps_per_s']:,.0f} design-sweeps/s")


if __name__ == "__main__":
    main()
