"""InferenceMAX recipes (codesign.recipes): recipe-name decoding, the config parser, the vendored
table, and what codesign validate takes from it. Expected values are read off the InferenceX files
by hand (cited at each test), never from running our code."""

import csv

import pytest

from codesign import recipes as R
from codesign.validate import read_measured


def test_recipe_name_decoding():
    # ctx3 = 3 prefill workers, gen5 = 5 decode workers, dep4 = attention DP over 4 GPUs (with expert
    # parallelism), batch512 = max_batch_size per attention-DP rank, eplb0, mtp1 = 1 draft token
    assert R.decode_recipe_name("recipes/trtllm/b200-fp4/1k1k/mtp/ctx3_gen5_dep4_batch512_eplb0_mtp1.yaml") == {
        "prefill_workers": 3, "decode_workers": 5, "attention": "dp", "expert_parallel": True, "gpus": 4,
        "batch": 512, "batch_scope": "rank", "eplb": 0, "mtp": 1, "conc": None}
    # tep8: attention TP over 8 GPUs, so the batch is the worker's; mtp0 = no speculation
    d = R.decode_recipe_name("ctx1_gen4_tep8_batch32_eplb0_mtp0.yaml")
    assert (d["attention"], d["gpus"], d["batch"], d["batch_scope"], d["mtp"]) == ("tp", 8, 32, "worker", 0)
    # srt-slurm H200 names carry the per-worker concurrency as a c<C> prefix, the GB200/B200 FP8 ones
    # the run's concurrency as a suffix; tp8 / dp8 without EP
    d = R.decode_recipe_name("recipes/trtllm/h200/1k1k/mtp/c32_ctx1_gen11_tep8_batch128_eplb0_mtp3.yaml")
    assert (d["decode_workers"], d["batch"], d["mtp"], d["conc"]) == (11, 128, 3, 32)
    d = R.decode_recipe_name("recipes/trtllm/b300-fp8/1k1k/mtp/ctx3_gen2_dp8_batch512_eplb0_mtp1_11264.yaml")
    assert (d["attention"], d["expert_parallel"], d["batch"], d["mtp"], d["conc"]) == ("dp", False, 512, 1, 11264)
    # InferenceX's gb300-fp4 ctx1_gen1_dep32_batch8_eplb0_mtp.yaml gives no draft count
    assert R.decode_recipe_name("ctx1_gen1_dep32_batch8_eplb0_mtp.yaml")["mtp"] is None
    assert R.decode_recipe_name("recipes/gb200-fp8/1k1k/mid-curve.yaml") is None  # SGLang: no settings


#: Lines copied from SemiAnalysisAI/InferenceX .github/configs/nvidia-master.yaml at
#: 0004cf5f2577a1c1007a9bed7cc7d55656519507 (entry dsr1-fp4-gb200-dynamo-trt; other items left out).
SNIPPET_0004 = '''\
dsr1-fp4-gb200-dynamo-trt:
  image: nvcr.io/nvidia/ai-dynamo/tensorrtllm-runtime:0.8.1.post2
  model: nvidia/DeepSeek-R1-0528-NVFP4-v2
  model-prefix: dsr1
  runner: gb200
  precision: fp4
  framework: dynamo-trt
  multinode: true
  disagg: true
  seq-len-configs:
  - isl: 1024
    osl: 1024
    search-space:
    - spec-decoding: "mtp"
      conc-list: [ 16130 ]
      prefill:
        num-worker: 3
        tp: 4
        ep: 4
        dp-attn: true
        additional-settings:
        # https://github.com/ishandhanani/srt-slurm/blob/sa-submission-q1-2026/recipes/trtllm/gb200-fp4/1k1k/mtp/ctx3_gen5_dep4_batch768_eplb0_mtp1.yaml
        - "CONFIG_FILE=recipes/trtllm/gb200-fp4/1k1k/mtp/ctx3_gen5_dep4_batch768_eplb0_mtp1.yaml"
      decode:
        num-worker: 5
        tp: 4
        ep: 4
        dp-attn: true
    - conc-list: [ 12, 24, 48, 96, 192 ]
      prefill:
        num-worker: 1
        tp: 4
        ep: 4
        dp-attn: true
        additional-settings:
        # https://github.com/ishandhanani/srt-slurm/blob/sa-submission-q1-2026/recipes/trtllm/gb200-fp4/1k1k/stp/ctx1_gen4_tep8_batch32_eplb0_mtp0.yaml
        - "CONFIG_FILE=recipes/trtllm/gb200-fp4/1k1k/stp/ctx1_gen4_tep8_batch32_eplb0_mtp0.yaml"
      decode:
        num-worker: 4
        tp: 8
        ep: 8
        dp-attn: false
'''

#: Lines copied from the same file at 344ac6c2982f9940725127d97f45a01b26e8fccc (the December 2025
#: GB200 entry, settings as environment variables; an aggregated entry and other items left out).
SNIPPET_344A = '''\
dsr1-fp4-b200-sglang:
  image: lmsysorg/sglang:v0.5.5-cu129-amd64
  model: nvidia/DeepSeek-R1-0528-FP4-V2
  model-prefix: dsr1
  runner: b200
  precision: fp4
  framework: sglang
  multinode: false
  seq-len-configs:
  - isl: 1024
    osl: 1024
    search-space:
    - { tp: 4, ep: 4, conc-start: 4, conc-end: 128 }
    - { tp: 8, ep: 8, conc-start: 4, conc-end: 128 }

dsr1-fp4-gb200-dynamo-trt:
  image: nvcr.io#nvidia/ai-dynamo/tensorrtllm-runtime:0.5.1-rc0.pre3
  model: deepseek-r1-fp4
  model-prefix: dsr1
  runner: gb200
  precision: fp4
  framework: dynamo-trt
  multinode: true
  disagg: true
  seq-len-configs:
  - isl: 1024
    osl: 1024
    search-space:
    - spec-decoding: "mtp"
      conc-list: [ 1, 2, 4, 8, 16, 36 ]
      prefill:
        num-worker: 1
        tp: 4
        ep: 4
        dp-attn: false
        additional-settings:
        - "PREFILL_MAX_NUM_TOKENS=4608"
        - "PREFILL_MAX_BATCH_SIZE=4"
      decode:
        num-worker: 4
        tp: 8
        ep: 8
        dp-attn: false
        additional-settings:
        - "DECODE_MAX_NUM_TOKENS=128"
        - "DECODE_MAX_BATCH_SIZE=32"
        - "DECODE_GPU_MEM_FRACTION=0.9"
        - "DECODE_MTP_SIZE=3"

    - spec-decoding: "mtp"
      conc-list: [ 2150 ]
      prefill:
        num-worker: 2
        tp: 4
        ep: 4
        dp-attn: true
        additional-settings:
        - "PREFILL_MAX_NUM_TOKENS=4608"
        - "PREFILL_MAX_BATCH_SIZE=4"
      decode:
        num-worker: 1
        tp: 16
        ep: 16
        dp-attn: true
        additional-settings:
        - "DECODE_MAX_NUM_TOKENS=256"
        - "DECODE_MAX_BATCH_SIZE=128"
        - "DECODE_GPU_MEM_FRACTION=0.7"
        - "DECODE_MTP_SIZE=1"
'''


def test_parser_on_recipe_file_items():
    pytest.importorskip("yaml")
    rows = R.parse_master(SNIPPET_0004, "0004cf5f")
    assert len(rows) == 2
    a, b = rows
    assert (a["hardware"], a["framework"], a["precision"], a["spec_decoding"], a["isl"], a["osl"]) == \
        ("gb200", "dynamo-trt", "fp4", "mtp", 1024, 1024)
    assert (a["prefill_num_worker"], a["prefill_tp"], a["prefill_ep"], a["prefill_dp_attn"]) == (3, 4, 4, True)
    assert (a["decode_num_worker"], a["decode_tp"], a["decode_ep"], a["decode_dp_attn"]) == (5, 4, 4, True)
    assert a["recipe"] == "recipes/trtllm/gb200-fp4/1k1k/mtp/ctx3_gen5_dep4_batch768_eplb0_mtp1.yaml"
    # batch768 per attention-DP rank x 4 ranks; mtp1
    assert (a["decode_max_batch"], a["decode_batch_scope"], a["decode_batch_per_instance"], a["mtp_draft_tokens"]) == \
        (768, "rank", 3072, 1)
    assert a["conc_list"] == a["run_conc_list"] == "16130" and a["note"] == ""
    # no spec-decoding key: none; tep8 batch32 is per decode worker
    assert b["spec_decoding"] == "none" and b["conc_list"] == "12 24 48 96 192"
    assert (b["decode_max_batch"], b["decode_batch_scope"], b["decode_batch_per_instance"], b["mtp_draft_tokens"]) == \
        (32, "worker", 32, 0)


def test_parser_on_settings_items():
    pytest.importorskip("yaml")
    rows = R.parse_master(SNIPPET_344A, "344ac6c2")
    assert [r["config"] for r in rows] == ["dsr1-fp4-gb200-dynamo-trt"] * 2  # the aggregated entry is skipped
    a, b = rows
    # DECODE_MAX_BATCH_SIZE=32 on TP8 workers without attention DP: 32 per worker; DECODE_MTP_SIZE=3.
    # The launcher (dynamo performance_sweeps bench.sh) runs conc x 4 decode workers.
    assert (a["decode_max_batch"], a["decode_batch_scope"], a["decode_batch_per_instance"], a["mtp_draft_tokens"]) == \
        (32, "worker", 32, 3)
    assert a["recipe"] == "" and a["conc_list"] == "1 2 4 8 16 36" and a["run_conc_list"] == "4 8 16 32 64 144"
    # DECODE_MAX_BATCH_SIZE=128 per rank of a TP16 attention-DP worker: 2048; DECODE_MTP_SIZE=1
    assert (b["decode_max_batch"], b["decode_batch_scope"], b["decode_batch_per_instance"], b["mtp_draft_tokens"]) == \
        (128, "rank", 2048, 1)
    assert b["run_conc_list"] == "2150"
    # the context servers' PREFILL_MAX_NUM_TOKENS=4608, PREFILL_MAX_BATCH_SIZE=4 of the snippet
    assert all((r["prefill_max_tokens"], r["prefill_max_batch"]) == (4608, 4) for r in rows)


def test_recipe_files_give_the_prefill_pass():
    # the srt-slurm files' prefill sections, per prefill replica (values as in the files: NVIDIA/srt-slurm
    # recipes/gb200-fp8/8k1k/mid-curve.yaml: chunked-prefill-size 131072 over dp-size 8 with
    # enable-dp-attention; the TensorRT-LLM context server of ctx1_gen4_tep8_batch16_eplb0_mtp0.yaml:
    # max_num_tokens 16640, max_batch_size 2)
    assert R.prefill_pass("recipes/gb200-fp8/8k1k/mid-curve.yaml") == (16384, None)
    assert R.prefill_pass("recipes/trtllm/gb200-fp4/8k1k/stp/ctx1_gen4_tep8_batch16_eplb0_mtp0.yaml") == (16640, 2)
    assert R.prefill_pass("recipes/not/a/recipe.yaml") == (None, None)


def test_vendored_table():
    rows = R.recipes()
    assert len(rows) >= 400
    assert {r["hardware"] for r in rows} >= {"gb200", "gb300", "b200", "h200", "h100"}
    # the item of imx-00155 (0004cf5f, dsr1-fp4-gb200-dynamo-trt, 1k/1k, conc-list [ 16130 ])
    (r,) = [r for r in rows if r["recipe"].endswith("gb200-fp4/1k1k/mtp/ctx3_gen5_dep4_batch768_eplb0_mtp1.yaml")]
    assert (r["decode_batch_per_instance"], r["mtp_draft_tokens"], r["conc"]) == (3072, 1, frozenset({16130}))
    assert "0004cf5f" in r["source"].split()
    # the table agrees with the names it was made from (a hand edit of a number would show here)
    for r in rows:
        name = R.decode_recipe_name(r["recipe"]) if r["recipe"] else None
        if name:
            assert r["decode_max_batch"] == name["batch"], r["recipe"]
            assert r["mtp_draft_tokens"] == name["mtp"], r["recipe"]


def _row(shared_data, tmp_path, pid, **changes):
    src = shared_data / "measured" / "inferencemax_public.csv"
    with open(src, newline="") as f:
        rd = csv.DictReader(f)
        (row,) = [r for r in rd if r["point_id"] == pid]
        cols = rd.fieldnames
    dst = tmp_path / f"{pid}.csv"
    with open(dst, "w", newline="") as f:
        w = csv.DictWriter(f, cols)
        w.writeheader()
        w.writerow(dict(row, **changes))
    (pt,) = read_measured(dst)[1]
    return pt


def test_gb200_rows_take_the_recipe_batch_limit_and_drafts(shared_data, tmp_path):
    # imx-00155: GB200 dynamo-trt fp4 1k/1k MTP, C = 16130, 3 prefill + 5 decode workers of TP4 with
    # attention DP: recipe ctx3_gen5_dep4_batch768_eplb0_mtp1 -> 768 x 4 ranks = 3072 per decode
    # worker, 1 draft token (not the 3 assumed without a recipe)
    pt = _row(shared_data, tmp_path, "imx-00155")
    assert pt.deploy["mb"] == 3072 and pt.deploy["spec"] == 1
    assert any("ctx3_gen5_dep4_batch768_eplb0_mtp1.yaml" in w for w in pt.assumptions)
    assert not any("assumed" in w for w in pt.assumptions + pt.warnings)
    # imx-02278 (December 2025): 2 prefill workers, 1 decode worker of TP16 with attention DP, C = 2150:
    # DECODE_MAX_BATCH_SIZE=128 per rank x 16 = 2048, DECODE_MTP_SIZE=1
    pt = _row(shared_data, tmp_path, "imx-02278")
    assert pt.deploy["mb"] == 2048 and pt.deploy["spec"] == 1
    # imx-02284: 4 decode workers of TP8, C = 564 = 141 x 4 (conc-list entry 141 times the decode
    # workers): DECODE_MAX_BATCH_SIZE=128 per worker, no speculation
    pt = _row(shared_data, tmp_path, "imx-02284")
    assert pt.deploy["mb"] == 128 and "spec" not in pt.deploy


def test_vendored_table_carries_the_context_servers_pass():
    # InferenceX nvidia-master.yaml at 344ac6c2 and 8ccec7a7 (read in full): every
    # dsr1-fp4-gb200-dynamo-trt item sets PREFILL_MAX_NUM_TOKENS=4608, PREFILL_MAX_BATCH_SIZE=4 at 1k/1k
    # and 8448, 1 at 8k/1k; every gptoss-fp4-gb200-dynamo-trt item 20000, 32; the SGLang items none
    rows = [r for r in R.recipes() if not r["recipe"]]
    want = {("dsr1-fp4-gb200-dynamo-trt", 1024): (4608, 4), ("dsr1-fp4-gb200-dynamo-trt", 8192): (8448, 1),
            ("gptoss-fp4-gb200-dynamo-trt", 1024): (20000, 32), ("gptoss-fp4-gb200-dynamo-trt", 8192): (20000, 32)}
    seen = set()
    for r in rows:
        got = (r["prefill_max_tokens"], r["prefill_max_batch"])
        if r["framework"] == "dynamo-sglang":
            assert got == (None, None), r["config"]
        else:
            assert got == want[(r["config"], r["isl"])], (r["config"], r["isl"])
            seen.add((r["config"], r["isl"]))
    assert seen == set(want)
    # a recipe-file item takes its file's values (srt_slurm_prefill.csv): the TP4 context server of
    # trtllm/gb200-fp4/8k1k/stp/ctx1_gen4_tep8_batch16_eplb0_mtp0.yaml, 16640 tokens and 2 requests
    (r,) = [r for r in R.recipes() if r["recipe"].endswith("gb200-fp4/8k1k/stp/ctx1_gen4_tep8_batch16_eplb0_mtp0.yaml")]
    assert (r["prefill_max_tokens"], r["prefill_max_batch"]) == (16640, 2)


def test_rows_without_a_recipe_keep_the_fallback(shared_data, tmp_path):
    # the same topology at a concurrency no recipe ran: not matched; 16000 users on 20 ranks is 800
    # per rank, past 1.3 x 512, so the power-of-two rule sets no limit; MTP keeps the assumed 3
    pt = _row(shared_data, tmp_path, "imx-00155", conc="16000")
    assert "mb" not in pt.deploy and pt.deploy["spec"] == 3
    assert any("not used" in w for w in pt.warnings)


def test_recipe_source_names_the_repository_and_commit_the_file_was_read_at():
    # specs/recipes/srt_slurm_prefill.csv: recipes/gb200-fp4/8k1k/max-tpt.yaml read from
    # NVIDIA/srt-slurm at 975f228f...; a file the table does not hold keeps its bare path
    with open(R.PREFILL_CSV, newline="", encoding="utf-8") as f:
        (line,) = [r for r in csv.DictReader(x for x in f if not x.startswith("#"))
                   if r["recipe"] == "recipes/gb200-fp4/8k1k/max-tpt.yaml"]
    assert (line["repo"], line["commit"][:8]) == ("NVIDIA/srt-slurm", "975f228f")
    assert R.recipe_source("recipes/gb200-fp4/8k1k/max-tpt.yaml") == \
        "NVIDIA/srt-slurm@975f228f:recipes/gb200-fp4/8k1k/max-tpt.yaml"
    assert R.recipe_source("recipes/not/in/the/table.yaml") == "recipes/not/in/the/table.yaml"
