"""``codesign model import`` and ``codesign model show``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from codesign.arch import account
from codesign.cli import main
from codesign.model_import import hf_config_to_model_table, model_toml
from codesign.spec import Model, spec_from_dict

REPO = Path(__file__).resolve().parents[1]
_env = os.environ.get("CODESIGN_SHARED_DATA")
HF = (Path(_env) if _env else REPO.parent / "shared" / "data") / "hf_configs"
needs_data = pytest.mark.skipif(not (HF / "gpt-oss-120b.json").is_file(), reason=f"no HF configs in {HF}")

JSON_KEYS = {"schema_version", "name", "total_params", "active_params", "kv_cache_elems_per_token",
             "window_kv_cache_elems_per_token", "sliding_window", "prefill_flops_per_token",
             "decode_flops_per_token", "isl",
             # session 6: sparse attention (DSA) and linear attention (Gated DeltaNet); additive
             "sparse_attention_topk", "indexer_cache_elems_per_token", "linear_attention_layers",
             "recurrent_state_elems_per_request", "conv_state_elems_per_request",
             # session 28: the model's context length (HF max_position_embeddings); additive
             "context_length"}


def run(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


@needs_data
def test_import_stdout_and_file(capsys, tmp_path):
    cfg = HF / "gpt-oss-120b.json"
    rc, out, err = run(capsys, "model", "import", str(cfg))
    assert rc == 0 and out == model_toml(cfg)
    assert "hidden_size = 2880  # gpt-oss-120b.json: hidden_size" in out.splitlines()
    # the released config's max_position_embeddings (131072: OpenAI's 128k context)
    assert "context_length = 131072  # gpt-oss-120b.json: max_position_embeddings" in out.splitlines()
    dest = tmp_path / "gpt.toml"
    rc, out, err = run(capsys, "model", "import", str(cfg), "-o", str(dest))
    assert rc == 0 and out == "" and dest.read_text() == model_toml(cfg)


@needs_data
def test_show_json_from_config_and_spec(capsys, tmp_path):
    cfg = HF / "gpt-oss-120b.json"
    rc, out, _ = run(capsys, "model", "show", str(cfg), "--json")
    assert rc == 0
    doc = json.loads(out)
    assert set(doc) == JSON_KEYS
    assert doc["schema_version"] == 1 and doc["name"] == "gpt-oss-120b" and doc["isl"] == 8192
    assert doc["total_params"] == 116_829_156_672 and doc["active_params"] == 5_132_849_472
    assert doc["context_length"] == 131_072  # the config's max_position_embeddings
    assert doc["kv_cache_elems_per_token"] == 18 * 2 * 8 * 64
    assert doc["window_kv_cache_elems_per_token"] == 18 * 2 * 8 * 64
    assert doc["sliding_window"] == 128
    a = account(spec_from_dict(hf_config_to_model_table(cfg), cls=Model))
    assert doc["prefill_flops_per_token"] == a.prefill_flops_per_token(8192)
    assert doc["decode_flops_per_token"] == a.decode_flops_per_token(8192)

    # Same numbers from the checked-in spec fragment, and from a spec that includes it.
    frag = REPO / "specs" / "models" / "gpt-oss-120b.toml"
    rc, out2, _ = run(capsys, "model", "show", str(frag), "--json")
    assert rc == 0 and json.loads(out2) == doc
    spec = tmp_path / "s.toml"
    spec.write_text(f'include = ["{frag.as_posix()}"]\n[model]\nname = "renamed"\n')
    rc, out3, _ = run(capsys, "model", "show", str(spec), "--json", "--isl", "1024")
    d3 = json.loads(out3)
    assert rc == 0 and d3["name"] == "renamed" and d3["isl"] == 1024
    assert d3["prefill_flops_per_token"] == a.prefill_flops_per_token(1024)
    assert d3["decode_flops_per_token"] == a.decode_flops_per_token(1024)


@needs_data
def test_show_dense_null_window_and_table(capsys):
    rc, out, _ = run(capsys, "model", "show", str(HF / "llama-3.1-70b.json"), "--json")
    doc = json.loads(out)
    assert doc["sliding_window"] is None and doc["kv_cache_elems_per_token"] == 80 * 2 * 8 * 128
    rc, out, _ = run(capsys, "model", "show", str(REPO / "specs" / "models" / "deepseek-r1.toml"))
    assert rc == 0 and "671,026,419,200" in out and "35,136" in out


@needs_data
def test_round_trip_through_cli(capsys, tmp_path):
    for cfg in sorted(HF.glob("*.json")):
        dest = tmp_path / f"{cfg.stem}.toml"
        assert run(capsys, "model", "import", str(cfg), "-o", str(dest))[0] == 0
        _, a, _ = run(capsys, "model", "show", str(cfg), "--json")
        _, b, _ = run(capsys, "model", "show", str(dest), "--json")
        assert json.loads(a) == json.loads(b)


def test_refusals_exit_2(capsys, tmp_path):
    base = {"model_type": "llama", "hidden_size": 256, "num_hidden_layers": 2, "vocab_size": 100,
            "num_attention_heads": 4, "intermediate_size": 512}
    missing = tmp_path / "missing.json"
    missing.write_text(json.dumps({k: v for k, v in base.items() if k != "hidden_size"}))
    rc, out, err = run(capsys, "model", "import", str(missing))
    assert rc == 2 and out == ""
    assert err.strip() == f"error: {missing}: hidden_size: missing (required)"

    unknown = tmp_path / "unknown.json"
    unknown.write_text(json.dumps({**base, "layer_types": ["full_attention", "chunked_attention"]}))
    for cmd in ("import", "show"):
        rc, out, err = run(capsys, "model", cmd, str(unknown))
        assert rc == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1
        assert err.startswith(f"error: {unknown}: layer_types[1]: unknown layer type 'chunked_attention'")

    rc, _, err = run(capsys, "model", "show", str(tmp_path / "nope.json"))
    assert rc == 2 and "no such file" in err
    notable = tmp_path / "x.toml"
    notable.write_text("[chip]\nname = 'x'\n")
    rc, _, err = run(capsys, "model", "show", str(notable))
    assert rc == 2 and "no [model] table" in err
    bad = tmp_path / "bad.toml"
    bad.write_text("[model]\nname = 'x'\nhidden_size = 0\n")
    rc, _, err = run(capsys, "model", "show", str(bad))
    assert rc == 2 and "model.hidden_size" in err and "Traceback" not in err
    rc, _, err = run(capsys, "model", "show", str(notable), "--isl", "0")
    assert rc == 2


def test_import_refuses_to_write_over_its_input(cli, tmp_path):
    """`model import self.json -o self.json` replaced the Hugging Face config with TOML, exit 0."""
    import shutil

    src = tmp_path / "cfg.json"
    shutil.copy(REPO / "specs" / "models" / "hf_configs" / "gpt-oss-20b.json", src)  # vendored: no shared data needed
    before = src.read_bytes()
    rc, out, err = cli("model", "import", src, "-o", src)
    assert rc == 2 and "is the input config" in err, err
    assert src.read_bytes() == before


@needs_data
def test_show_warns_of_an_isl_beyond_the_context(capsys):
    """gpt-oss-120b serves 131,072 tokens (max_position_embeddings): its FLOPs at ISL 200,000 are
    still counted, with a warning that no such request is served."""
    rc, out, err = run(capsys, "model", "show", str(HF / "gpt-oss-120b.json"), "--isl", "200000")
    assert rc == 0 and "context length" in out and "131,072" in out
    assert err.strip() == ("warning: --isl 200,000 is longer than gpt-oss-120b's context length, "
                           "131,072 tokens (model.context_length)"), err
    rc, out, err = run(capsys, "model", "show", str(HF / "gpt-oss-120b.json"), "--isl", "131072")
    assert rc == 0 and err == ""
