"""Architecture accounting: parameter counts, KV-cache size and FLOPs per token of a :class:`Model`.

Pure Python (no JAX): the numbers here are exact integers derived module by module from the
Hugging Face modeling files, so tests can check them against hand derivations and published
counts, and cost models can use them as constants.

Sources:
    * Llama (dense GQA): ``transformers/models/llama/modeling_llama.py`` (``LlamaAttention``:
      q/k/v/o projections, bias = ``attention_bias``; ``LlamaMLP``: gate/up/down, bias =
      ``mlp_bias``; ``LlamaRMSNorm`` weight only).
    * gpt-oss: ``transformers/models/gpt_oss/modeling_gpt_oss.py`` (``GptOssAttention`` with
      biased q/k/v/o and ``sinks`` of shape ``(num_attention_heads,)``; ``GptOssTopKRouter``
      ``weight (E, h)`` + ``bias (E,)``; ``GptOssExperts`` ``gate_up_proj (E, h, 2I)`` +
      ``gate_up_proj_bias (E, 2I)``, ``down_proj (E, I, h)`` + ``down_proj_bias (E, h)``) and the
      gpt-oss model card (OpenAI, 2025), whose table gives 116.83B total and 5.13B active
      parameters, the active count including the unembedding but not the embedding.
    * DeepSeek-V3 / R1 and Kimi K2: DeepSeek-V3 technical report (arXiv:2412.19437) §2.1.1
      (multi-head latent attention: ``W^{DQ}``, ``W^{UQ}/W^{QR}``, ``W^{DKV}``, ``W^{KR}``,
      ``W^{UK}``, ``W^{UV}``, ``W^O``; only ``c^{KV}_t`` and ``k^R_t`` are cached) and §2.1.2
      (DeepSeekMoE: shared + routed experts, sigmoid gate with a per-expert bias), and
      ``modeling_deepseek.py`` shipped with the checkpoints (``q_a_proj``, ``q_a_layernorm``,
      ``q_b_proj``, ``kv_a_proj_with_mqa``, ``kv_a_layernorm``, ``kv_b_proj``, ``o_proj``;
      ``MoEGate.weight (E, h)`` and ``e_score_correction_bias (E,)`` for ``noaux_tc``).
    * Qwen3-Next / Qwen3.5 (hybrid): ``transformers/models/qwen3_next/modeling_qwen3_next.py``.
      Linear-attention layers (``Qwen3NextGatedDeltaNet``): ``in_proj_qkvz`` ``h → 2·Hk·dk + 2·Hv·dv``,
      ``in_proj_ba`` ``h → 2·Hv``, a depthwise ``conv1d`` over the ``2·Hk·dk + Hv·dv`` q/k/v channels
      (kernel ``K``, no bias), ``dt_bias`` and ``A_log`` ``(Hv,)``, a gated RMSNorm ``(dv,)`` and
      ``out_proj`` ``Hv·dv → h``. Per request they cache a recurrent state ``(Hv, dk, dv)`` and the
      conv window ``(2·Hk·dk + Hv·dv) × (K − 1)``, whatever the context. Gated attention
      (``Qwen3NextAttention``): ``q_proj`` ``h → 2·H·d`` (query and output gate), q/k RMSNorms ``(d,)``.
    * DeepSeek sparse attention (DSA: DeepSeek-V3.2-Exp ``inference/model.py`` ``Indexer``; GLM-5's
      dimensions in ai-dynamo/aiconfigurator ``aic-core/src/aiconfigurator_core/sdk/operations/dsa.py``
      ``DSA_MODEL_DIMS``): per layer an indexer ``wq_b`` ``q_lora_rank → n·d``, ``wk`` ``h → d``,
      ``k_norm`` LayerNorm ``(d,)`` weight and bias, ``weights_proj`` ``h → n`` (``n`` =
      ``index_n_heads``, ``d`` = ``index_head_dim``); it caches one FP8 key of ``d`` per token per
      layer (plus an FP32 scale per 128) and scores every cached token (2·n·d FLOPs each); MLA then
      attends only the ``index_topk`` selected tokens.
"""

from __future__ import annotations

import attrs

from .spec import Model

__all__ = ["Accounting", "account"]


@attrs.frozen(kw_only=True)
class Accounting:
    """Counts for one model; parameter counts are whole-model unless named per-something.

    Attributes:
        embedding_params: input embedding ``vocab × hidden``.
        lm_head_params: output projection (counted once in ``total_params`` when tied).
        attention_params: all layers' token mixers: q/k/v/o (or MLA ``q_a, q_b, kv_a, kv_b, o``
            and the ``q_a``/``kv_a`` norms), biases, sinks; linear-attention layers' projections,
            conv, gates and norm.
        dense_ffn_params: FFN of the non-MoE layers.
        shared_expert_params: shared experts of all MoE layers.
        routed_expert_params: all routed experts of all MoE layers, expert biases included.
        params_per_routed_expert: one routed expert of one layer.
        router_params: router (gate) weights and biases of all MoE layers.
        norm_params: the two per-layer norms of every layer plus the final norm.
        n_moe_layers: layers whose FFN is MoE.
        num_experts: routed experts per MoE layer (0 for a dense model).
        experts_per_token: routed experts each token uses (0 for a dense model).
        total_params: every parameter of the served model.
        active_params: parameters one token uses: the lm_head included, the input-embedding lookup
            excluded (OpenAI's convention for gpt-oss's 5.13B).
        kv_cache_elems_per_token: cached elements per token summed over the layers whose cache
            grows without bound (full attention).
        window_kv_cache_elems_per_token: the same over sliding-window layers, whose cache stops
            growing at ``sliding_window`` tokens.
        sliding_window: the window [tokens], ``None`` without sliding layers.
        linear_attention_layers: layers whose token mixer is linear attention (Gated DeltaNet).
        recurrent_state_elems_per_request: recurrent-state elements of one request over the
            linear-attention layers, ``Hv·dk·dv`` each (fixed, whatever the context).
        conv_state_elems_per_request: causal-conv window elements of one request over the
            linear-attention layers, ``(2·Hk·dk + Hv·dv)·(K − 1)`` each.
        recurrent_flops_per_token: FLOPs per token of the gated delta rule's state update and
            read-out, summed over linear-attention layers (recurrent form, as in decode): per value
            head, decay ``S·g`` (dk·dv), ``S^T k`` (2·dk·dv), rank-1 update ``S += k·δ^T`` (2·dk·dv),
            output ``S^T q`` (2·dk·dv): 7·dk·dv; plus the conv, 2·K per channel [FLOP].
        sparse_attention_topk: DSA's ``index_topk``: full-attention layers attend at most this many
            positions (``None``: every position).
        indexer_cache_elems_per_token: DSA indexer keys cached per token over all layers.
        indexer_flops_per_ctx: DSA indexer scoring FLOPs per query token per cached position,
            summed over layers (it scores every position, sparse or not) [FLOP].
        recurrent_chunk_flops_per_token: the chunked (prefill) form's extra intra-chunk attention per
            token, 2·C·(dk + dv) per value head with chunk C = :data:`DELTA_RULE_CHUNK` [FLOP].
        attn_flops_per_ctx_prefill_full: attention score + value FLOPs per token per attended
            context position, prefill, summed over full-attention layers [FLOP].
        attn_flops_per_ctx_prefill_window: the same over sliding-window layers [FLOP].
        attn_flops_per_ctx_decode_full: decode, full-attention layers [FLOP] (MLA absorbed).
        attn_flops_per_ctx_decode_window: decode, sliding-window layers [FLOP].
        linear_flops_per_token: ``2 ×`` the active parameters that are matmul weights (biases,
            norms, sinks and the embedding lookup excluded; lm_head and router included) [FLOP].
    """

    embedding_params: int
    lm_head_params: int
    attention_params: int
    dense_ffn_params: int
    shared_expert_params: int
    routed_expert_params: int
    params_per_routed_expert: int
    router_params: int
    norm_params: int
    n_moe_layers: int
    num_experts: int
    experts_per_token: int
    total_params: int
    active_params: int
    kv_cache_elems_per_token: int
    window_kv_cache_elems_per_token: int
    sliding_window: int | None
    attn_flops_per_ctx_prefill_full: float
    attn_flops_per_ctx_prefill_window: float
    attn_flops_per_ctx_decode_full: float
    attn_flops_per_ctx_decode_window: float
    linear_flops_per_token: float
    sparse_attention_topk: int | None = None
    indexer_cache_elems_per_token: int = 0
    indexer_flops_per_ctx: float = 0.0
    linear_attention_layers: int = 0
    recurrent_state_elems_per_request: int = 0
    conv_state_elems_per_request: int = 0
    recurrent_flops_per_token: float = 0.0
    recurrent_chunk_flops_per_token: float = 0.0

    def prefill_flops_per_token(self, isl: int) -> float:
        """FLOPs per prompt token of a causal prefill of ``isl`` tokens, averaged over positions.

        Position ``p`` (1-based) attends to ``p`` positions in full layers and ``min(p, W)`` in
        window layers, so the mean context is ``(isl + 1) / 2`` (full) and
        ``Σ min(p, W) / isl`` (window): the total over the prompt is quadratic in ``isl``. With
        sparse attention full layers attend ``min(p, index_topk)`` positions and the indexer scores
        all ``p``; linear-attention layers add their per-token state work and the chunked form's.

        Args:
            isl: input sequence length [tokens], >= 1.
        """
        if isl < 1:
            raise ValueError(f"isl must be >= 1 (got {isl})")
        mean_all = (isl + 1) / 2
        topk = self.sparse_attention_topk
        mean_full = _sum_min(isl, topk) / isl if topk else mean_all
        mean_win = _sum_min(isl, self.sliding_window) / isl if self.sliding_window else 0.0
        return (self.linear_flops_per_token
                + self.attn_flops_per_ctx_prefill_full * mean_full
                + self.attn_flops_per_ctx_prefill_window * mean_win
                + self.indexer_flops_per_ctx * mean_all
                + self.recurrent_flops_per_token + self.recurrent_chunk_flops_per_token)

    def decode_flops_per_token(self, context: int) -> float:
        """FLOPs to decode one token attending to ``context`` positions.

        Window layers attend ``min(context, sliding_window)`` positions, sparse-attention layers
        ``min(context, index_topk)`` (their indexer scores all ``context``); linear-attention
        layers add their per-token state work.

        Args:
            context: positions attended (prompt plus tokens generated so far) [tokens], >= 0.
        """
        if context < 0:
            raise ValueError(f"context must be >= 0 (got {context})")
        win = min(context, self.sliding_window) if self.sliding_window else 0
        full = min(context, self.sparse_attention_topk) if self.sparse_attention_topk else context
        return (self.linear_flops_per_token
                + self.attn_flops_per_ctx_decode_full * full
                + self.attn_flops_per_ctx_decode_window * win
                + self.indexer_flops_per_ctx * context
                + self.recurrent_flops_per_token)


def _sum_min(n: int, w: int) -> int:
    """``Σ_{p=1..n} min(p, w)``."""
    if n <= w:
        return n * (n + 1) // 2
    return w * (w + 1) // 2 + (n - w) * w


#: Chunk length of the chunked gated-delta-rule kernel that prefill runs (flash-linear-attention
#: ``chunk_gated_delta_rule``, used by vLLM and SGLang for Qwen3-Next; ``BT = 64``).
DELTA_RULE_CHUNK = 64


def _linear_layer(m: Model) -> tuple[int, int, int, int, float, float]:
    """One Gated DeltaNet layer: ``(params, matmul-weight params, recurrent-state elements,
    conv-state elements, recurrent FLOPs per token, chunked-form extra FLOPs per token)``."""
    h = m.hidden_size
    hk, hv = m.linear_num_key_heads, m.linear_num_value_heads
    dk, dv, k = m.linear_key_head_dim, m.linear_value_head_dim, m.linear_conv_kernel_dim
    conv_dim = 2 * hk * dk + hv * dv
    weights = h * (2 * hk * dk + 2 * hv * dv) + h * 2 * hv + hv * dv * h   # in_proj_qkvz, in_proj_ba, out_proj
    other = conv_dim * k + 2 * hv + dv                                      # conv1d, dt_bias + A_log, norm
    flops = float(hv * 7 * dk * dv + 2 * k * conv_dim)
    chunk = float(hv * 2 * DELTA_RULE_CHUNK * (dk + dv))
    return weights + other, weights, hv * dk * dv, conv_dim * (k - 1), flops, chunk


def _attention_layer(m: Model) -> tuple[int, int, int]:
    """``(params, matmul-weight params, kv elements per token)`` of one attention layer."""
    h, H = m.hidden_size, m.num_attention_heads
    if m.attention == "mla":
        # DeepSeek-V3 §2.1.1 / modeling_deepseek.DeepseekV3Attention.
        nope, rope, v, r = m.qk_nope_head_dim, m.qk_rope_head_dim, m.v_head_dim, m.kv_lora_rank
        qk = nope + rope
        b = 1 if m.attention_bias else 0
        if m.q_lora_rank:
            q_w = h * m.q_lora_rank + m.q_lora_rank * H * qk          # q_a_proj, q_b_proj
            q_extra = b * m.q_lora_rank + m.q_lora_rank               # q_a_proj bias, q_a_layernorm
        else:
            q_w = h * H * qk                                          # q_proj (DeepSeek-V2-Lite)
            q_extra = 0
        kv_w = h * (r + rope) + r * H * (nope + v)                    # kv_a_proj_with_mqa, kv_b_proj
        kv_extra = b * (r + rope) + r                                 # kv_a bias, kv_a_layernorm
        o_w = H * v * h
        o_extra = b * h
        weights = q_w + kv_w + o_w
        if m.index_topk:                                              # DSA lightning indexer
            n, d = m.index_n_heads, m.index_head_dim
            weights += m.q_lora_rank * n * d + h * d + h * n          # wq_b, wk, weights_proj
            o_extra += 2 * d                                          # k_norm (LayerNorm)
        return weights + q_extra + kv_extra + o_extra, weights, r + rope
    kv, d = m.num_kv_heads, m.head_dim
    gate = 2 if m.attn_output_gate else 1                             # q_proj also yields the gate
    weights = gate * h * H * d + 2 * h * kv * d + H * d * h           # q, k, v, o
    biases = (gate * H * d + 2 * kv * d + h) if m.attention_bias else 0
    sinks = H if m.attention_sinks else 0
    qk_norms = 2 * d if m.attn_output_gate else 0                     # Qwen3-Next q_norm, k_norm
    return weights + biases + sinks + qk_norms, weights, 2 * kv * d


def _attn_flops_per_ctx(m: Model) -> tuple[int, int]:
    """``(prefill, decode)`` score + value FLOPs per attended position of one layer."""
    H = m.num_attention_heads
    if m.attention == "mla":
        nope, rope, v, r = m.qk_nope_head_dim, m.qk_rope_head_dim, m.v_head_dim, m.kv_lora_rank
        prefill = 2 * H * (nope + rope) + 2 * H * v       # keys/values decompressed (not absorbed)
        decode = 2 * H * (r + rope) + 2 * H * r           # W^UK, W^UV absorbed (FlashMLA, SGLang)
        return prefill, decode
    f = 2 * H * m.head_dim + 2 * H * m.head_dim
    return f, f


def _ffn(h: int, inter: int, gated: bool, bias: bool) -> int:
    n_proj = 3 if gated else 2
    b = ((2 * inter if gated else inter) + h) if bias else 0
    return n_proj * h * inter + b


def account(model: Model) -> Accounting:
    """Count parameters, KV-cache elements and FLOPs per token of ``model``.

    Per layer: attention (see :func:`_attention_layer`), two RMSNorms (``input_layernorm`` and
    ``post_attention_layernorm``, ``hidden`` weights each), and either a dense gated MLP or a MoE
    block (router, shared experts, routed experts); then a final norm, the input embedding and the
    lm_head (shared with the embedding when ``tie_word_embeddings``).

    The MLA linear FLOPs count ``kv_b_proj`` once per token: absorbing ``W^UK`` into the query
    and ``W^UV`` into the output (decode) costs ``H·nope·r + H·r·v`` multiply-adds per token, the
    same as ``kv_b_proj``'s ``r·H·(nope + v)`` weights, so one figure serves both modes.

    Args:
        model: a validated :class:`codesign.spec.Model`.

    Returns:
        The :class:`Accounting`.
    """
    m = model
    h, L = m.hidden_size, m.num_layers
    attn_layer, attn_w_layer, kv_layer = _attention_layer(m)
    pre_ctx, dec_ctx = _attn_flops_per_ctx(m)

    layer_types = m.layer_types or ("full",) * L
    n_window = sum(t == "sliding" for t in layer_types)
    n_linear = sum(t == "linear" for t in layer_types)
    n_full = L - n_window - n_linear
    n_attn = L - n_linear
    if n_linear:
        lin_layer, lin_w_layer, rec_layer, conv_layer, rec_fl, chunk_fl = _linear_layer(m)
    else:
        lin_layer = lin_w_layer = rec_layer = conv_layer = 0
        rec_fl = chunk_fl = 0.0
    moe_layers = m.moe_layers or (False,) * L
    n_moe = sum(moe_layers)
    n_dense = L - n_moe

    embedding = m.vocab_size * h
    lm_head = m.vocab_size * h
    attention = n_attn * attn_layer + n_linear * lin_layer
    dense_layer = _ffn(h, m.intermediate_size, m.ffn_gated, m.mlp_bias)
    dense_w_layer = _ffn(h, m.intermediate_size, m.ffn_gated, False)
    dense_ffn = n_dense * dense_layer

    if n_moe:
        E, k, mi = m.num_experts, m.experts_per_token, m.moe_intermediate_size
        per_expert = _ffn(h, mi, m.ffn_gated, m.expert_bias)
        per_expert_w = _ffn(h, mi, m.ffn_gated, False)
        shared_layer = m.num_shared_experts * _ffn(h, mi, m.ffn_gated, False)
        router_layer = E * h + (E if m.router_bias else 0)
    else:
        E = k = 0
        per_expert = per_expert_w = shared_layer = router_layer = 0
    shared = n_moe * shared_layer
    routed = n_moe * E * per_expert
    router = n_moe * router_layer
    norms = 2 * h * L + h

    total = (embedding + (0 if m.tie_word_embeddings else lm_head) + attention + dense_ffn
             + shared + routed + router + norms)
    active = (lm_head + attention + dense_ffn + shared + n_moe * k * per_expert + router + norms)
    matmul_active = (lm_head + n_attn * attn_w_layer + n_linear * lin_w_layer + n_dense * dense_w_layer + shared
                     + n_moe * (k * per_expert_w + E * h))

    return Accounting(
        embedding_params=embedding,
        lm_head_params=lm_head,
        attention_params=attention,
        dense_ffn_params=dense_ffn,
        shared_expert_params=shared,
        routed_expert_params=routed,
        params_per_routed_expert=per_expert,
        router_params=router,
        norm_params=norms,
        n_moe_layers=n_moe,
        num_experts=E,
        experts_per_token=k,
        total_params=total,
        active_params=active,
        kv_cache_elems_per_token=n_full * kv_layer,
        window_kv_cache_elems_per_token=n_window * kv_layer,
        sliding_window=m.sliding_window if n_window else None,
        attn_flops_per_ctx_prefill_full=float(n_full * pre_ctx),
        attn_flops_per_ctx_prefill_window=float(n_window * pre_ctx),
        attn_flops_per_ctx_decode_full=float(n_full * dec_ctx),
        attn_flops_per_ctx_decode_window=float(n_window * dec_ctx),
        linear_flops_per_token=2.0 * matmul_active,
        sparse_attention_topk=m.index_topk,
        indexer_cache_elems_per_token=n_attn * (m.index_head_dim or 0) if m.index_topk else 0,
        indexer_flops_per_ctx=float(n_attn * 2 * m.index_n_heads * m.index_head_dim) if m.index_topk else 0.0,
        linear_attention_layers=n_linear,
        recurrent_state_elems_per_request=n_linear * rec_layer,
        conv_state_elems_per_request=n_linear * conv_layer,
        recurrent_flops_per_token=n_linear * rec_fl,
        recurrent_chunk_flops_per_token=n_linear * chunk_fl,
    )
