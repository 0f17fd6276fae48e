"""Reference simulation of TensorRT-LLM's attention-DP balance in aggregated serving (a test helper).

The rule, as ``PyExecutor._balance_adp_requests`` runs it (NVIDIA/TensorRT-LLM
tensorrt_llm/_torch/pyexecutor/py_executor.py, ``attention_dp_config`` with ``enable_balance: true``
and ``batching_wait_iters: 0``): in every iteration the ranks all-gather how many context requests
they hold; if every rank holds one (and a free batch slot), the context requests are scheduled and
the counter is reset; otherwise the counter is incremented and the context requests are held,
unless the counter has reached ``timeout_iters`` (then they are scheduled and the counter reset) or
some rank holds no generation request. A rank schedules one context request per iteration (the
token budget of InferenceMAX's DeepSeek-R1 scripts, ``max_num_tokens`` = ISL + concurrency + 64,
rounded up to 64, holds one prompt beside the decoding tokens).

The serving loop is closed, as a benchmark client runs it: C users, C/K of them on each of the K
ranks (a user whose request finishes frees a slot on its rank, which takes the user's next request:
TensorRT-LLM assigns a new request to the rank with the fewest active requests), each decoding for
an output length drawn uniformly from [(1 − jitter)·L, L] iterations. Every rank keeps decoding
users while others wait, so the "no generation request" release does not fire. Used by
``tests/test_physics.py`` to check the closed form of ``codesign_analytical.model._adp_balance_wait``.
"""

from __future__ import annotations

import heapq

import numpy as np


def simulate(users: int, ranks: int, decode_iters: float, *, timeout_iters: int = 60, jitter: float = 0.2,
             iterations: int | None = None, warmup: float = 0.3, seed: int = 0) -> tuple[float, float]:
    """Mean wait [iterations] of a context request, from its arrival to the iteration that schedules
    it, and arrivals per iteration over all ranks, after a warm-up share of the run.

    Args:
        users: concurrency C (a multiple of ``ranks``). ranks: attention-DP ranks K.
        decode_iters: mean decode length in iterations (lengths uniform in [(1 − jitter)·L, L]).
        timeout_iters: TensorRT-LLM ``attention_dp_config.timeout_iters``.
    """
    rng = np.random.default_rng(seed)
    longest = decode_iters / (1.0 - jitter / 2.0)
    iterations = iterations or int(max(12 * decode_iters, 20_000))
    queues: list[list[int]] = [[] for _ in range(ranks)]
    returns: list[tuple[int, int]] = []  # (iteration the user's next request arrives, rank)
    for rank in range(ranks):
        for _ in range(users // ranks):  # users start at random phases of their decode (steady state)
            heapq.heappush(returns, (int(rng.uniform(0, longest)), rank))
    counter, waits, released_after_warmup = 0, [], 0
    start = int(warmup * iterations)
    for it in range(iterations):
        while returns and returns[0][0] <= it:
            queues[heapq.heappop(returns)[1]].append(it)
        if all(queues):
            counter, release = 0, True
        else:
            counter += 1
            release = counter >= timeout_iters
            if release:
                counter = 0
        if release:
            for rank, queue in enumerate(queues):
                if queue:
                    arrived = queue.pop(0)
                    if it >= start:
                        waits.append(it - arrived)
                        released_after_warmup += 1
                    done = it + 1 + int(rng.uniform((1.0 - jitter) * longest, longest))
                    heapq.heappush(returns, (done, rank))
    return float(np.mean(waits)), released_after_warmup / (iterations - start)
