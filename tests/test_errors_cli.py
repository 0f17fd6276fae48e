"""Bad input to the CLI: one clear line naming the file, key path and what was expected; exit 2."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from conftest import REPO, SPECS

SEARCH_SPEC = SPECS / "jalapeno-gpt-oss-120b.toml"
GRID_SPEC = SPECS / "kv-locality.toml"


def _refused(res, *needles):
    rc, out, err = res
    assert rc == 2, (rc, out, err)
    assert "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1, err
    for n in needles:
        assert n in err, (n, err)
    return err


# ------------------------------------------------------------------ 1. --out is a regular file
IMX_ROW = {  # imx-00018 of inferencemax_public.csv: DeepSeek-R1 FP8 on B200, TP4, conc 16
    "point_id": "imx-00018", "hardware": "b200", "model_key": "dsr1", "framework": "trt",
    "precision": "fp8", "spec_method": "none", "disagg": "False", "isl": "1024", "osl": "1024",
    "conc": "16", "tp": "4", "ep": "1", "dp_attention": "False",
    "tput_per_gpu_tok_s": "460.0413604760572", "mean_ttft_s": "0.21800891533116556",
    "mean_tpot_s": "0.016923118889238524",
}


def _csv(path, rows, cols=None):
    cols = cols or list(rows[0])
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, cols, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    return path


def _study(path, body):
    path.write_text(f'name = "s"\n[[steps]]\nkind = "grid"\nname = "g"\nspec = "{GRID_SPEC.as_posix()}"\n'
                    + body)
    return path


GOOD_AXES = ('x = { key = "memory.sram.capacity", values = ["0 MiB", "256 MiB"] }\n'
             'y = { key = "memory.hbm.bandwidth", values = ["2 TB/s", "4 TB/s"] }\n')


@pytest.mark.parametrize("cmd", ["optimize", "sweep", "validate", "study"])
def test_out_is_a_file(cli, tmp_path, cmd):
    f = tmp_path / "x"
    f.write_text("not a directory")
    if cmd in ("optimize", "sweep"):
        argv = [cmd, SEARCH_SPEC, "--out", f]
    elif cmd == "validate":
        argv = [cmd, _csv(tmp_path / "m.csv", [IMX_ROW]), "--out", f]
    else:
        argv = ["study", "run", _study(tmp_path / "s.toml", GOOD_AXES), "--out", f, "--quick"]
    err = _refused(cli(*argv))
    assert err.strip() == f"error: --out {f}: exists and is not a directory"
    assert f.read_text() == "not a directory"


def test_out_below_a_file(cli, tmp_path):
    f = tmp_path / "x"
    f.write_text("")
    _refused(cli("sweep", SEARCH_SPEC, "--out", f / "sub"), f"--out {f / 'sub'}", "is not a directory")


def test_calibrate_out_is_a_directory(cli, tmp_path):
    _refused(cli("calibrate", _csv(tmp_path / "m.csv", [IMX_ROW]), "--out", tmp_path),
             f"--out {tmp_path}: is a directory")


@pytest.mark.parametrize("command", ["optimize", "sweep", "validate", "calibrate", "study run"])
def test_an_empty_out_is_refused_not_read_as_the_default(cli, tmp_path, monkeypatch, command):
    """Fresh-user trial of session 16: `optimize --out ''` (an unset variable, --out "$DIR") quietly
    meant the default runs/<name> and resumed that study, while `--storage ''` is refused. Every
    --out refuses an empty path at parse time (exit 2, nothing written)."""
    monkeypatch.chdir(tmp_path)
    rc, out, err = cli(*command.split(), "x.toml", "--out", "")
    assert rc == 2 and "argument --out: '': empty; give a path" in err, err
    assert not list(tmp_path.iterdir())


def test_calibrate_out_that_is_its_measured_input_is_refused(cli, tmp_path):
    """Fresh-user trial of session 16: `calibrate m.csv --out m.csv` replaced the measured data with
    the calibration TOML (exit 0). Refused before the fit, the CSV untouched."""
    m = _csv(tmp_path / "m.csv", [IMX_ROW])
    before = m.read_bytes()
    _refused(cli("calibrate", m, "--out", m), f"--out {m}: is the input file {m}")
    assert m.read_bytes() == before


# ------------------------------------------------------------------ 2. measured CSV columns, conc
def test_validate_calibration_that_is_another_toml(cli, tmp_path):
    """A TOML that is no calibration (a project file given by mistake) is one line, and the advice
    does not point `codesign calibrate --out` at that file (it would overwrite it)."""
    f = tmp_path / "pyproject.toml"
    f.write_text('[project]\nname = "x"\n')
    err = _refused(cli("validate", _csv(tmp_path / "m.csv", [IMX_ROW]), "--calibration", f))
    assert err.strip() == (f"error: {f}: not a calibration file (no schema_version, cost_model or "
                           "[shared]; `codesign calibrate MEASURED.csv --out FILE` writes one)")


@pytest.mark.parametrize("cmd", ["validate", "calibrate"])
@pytest.mark.parametrize("drop", [["tp"], ["hardware"], ["tp", "hardware"]])
def test_inferencemax_missing_columns(cli, tmp_path, cmd, drop):
    cols = [c for c in IMX_ROW if c not in drop]
    m = _csv(tmp_path / "imx.csv", [IMX_ROW], cols)
    err = _refused(cli(cmd, m, *(["--out", tmp_path / "c.toml"] if cmd == "calibrate" else [])),
                   str(m), "InferenceMAX", "lacks required column")
    assert err.rstrip().endswith(", ".join(sorted(drop))) and "KeyError" not in err


def test_aiconfigurator_missing_system(cli, tmp_path):
    row = {"id": "a_c8", "model_path": "openai/gpt-oss-120b", "backend": "trtllm", "mode": "agg",
           "isl": "1024", "osl": "1024", "gemm_quant_mode": "", "moe_quant_mode": "",
           "batch_size": "8", "tp_size": "8", "pp_size": "1", "attention_dp_size": "1",
           "moe_tp_size": "1", "moe_ep_size": "8", "silicon_ttft_ms": "100", "silicon_tpot_ms": "5"}
    m = _csv(tmp_path / "aic.csv", [row])
    for cmd in ("validate", "calibrate"):
        _refused(cli(cmd, m), str(m), "aiconfigurator", "lacks required column system")


def test_measured_not_utf8(cli, tmp_path):
    m = tmp_path / "m.csv"
    m.write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff\xfe")
    _refused(cli("validate", m), f"{m}: not a UTF-8 text file")


def test_bad_conc_is_invalid_not_concurrency_1(cli, tmp_path):
    from codesign.validate import read_measured

    rows = [IMX_ROW] + [dict(IMX_ROW, point_id=f"bad-{i}", conc=c) for i, c in enumerate(["-4", "0", "abc", "2.5"])]
    m = _csv(tmp_path / "imx.csv", rows)
    _, pts = read_measured(m)
    by = {p.id: p for p in pts}
    assert by["bad-0"].status == "invalid: conc must be a whole number >= 1 (got -4)"
    assert by["bad-1"].status == "invalid: conc must be a whole number >= 1 (got 0)"
    assert by["bad-2"].status == "invalid: conc must be a whole number >= 1 (got abc)"
    assert by["bad-3"].status == "invalid: conc must be a whole number >= 1 (got 2.5)"
    assert by["imx-00018"].status == "ok" and by["imx-00018"].concurrency == 16

    rc, out, err = cli("validate", m, "--out", tmp_path / "o", "--json")
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["rows"] == 5 and doc["status"] == {"ok": 1, "invalid": 4}
    assert doc["errors"]["all"][0]["n"] == 1  # only the valid row is in the error tables
    pred = {r["point_id"]: r for r in csv.DictReader(open(tmp_path / "o" / "predictions.csv"))}
    assert list(pred) == [r["point_id"] for r in rows]  # no row dropped
    assert pred["bad-0"]["status"] == "invalid: conc must be a whole number >= 1 (got -4)"
    assert pred["bad-0"]["pred_tpot_ms"] == ""  # not priced
    assert pred["imx-00018"]["pred_tpot_ms"] != ""


# ------------------------------------------------------------------ 3. study load-time checks
@pytest.mark.parametrize("body, where, what", [
    (GOOD_AXES.replace("memory.sram.capacity", "memory.sram.capacty"), "steps.0.x.key",
     "no such spec key 'memory.sram.capacty'"),
    (GOOD_AXES + 'metric = "tok_per_kw"\n', "steps.0.metric", "unknown metric 'tok_per_kw'"),
    (GOOD_AXES.replace('"256 MiB"', '"0 W"'), "steps.0.x.values.1", "expected a size in bytes"),
    (GOOD_AXES.replace('["2 TB/s", "4 TB/s"]', "[]"), "steps.0.y.values", "list at least one value"),
    # zero where the spec takes none (an HBM bandwidth; zero SRAM, the x axis, is fine)
    (GOOD_AXES.replace('"2 TB/s"', '"0 TB/s"'), "steps.0.y.values.0", "must be > 0"),
    (GOOD_AXES + 'facet = { key = "workload.isl", values = [] }\n', "steps.0.facet.values",
     "list at least one value"),
    (GOOD_AXES + 'facet = { key = "workload.isl", values = [8192, -1] }\n', "steps.0.facet.values.1",
     "whole number >= 1"),
    (GOOD_AXES.replace("memory.sram.capacity", "model.hidden_size"), "steps.0.x.key", "cannot vary"),
    (GOOD_AXES.replace("memory.sram.capacity", "deployment.weights_format"), "steps.0.x.key",
     "not a numeric spec key"),
])
def test_study_grid_checked_at_load(cli, tmp_path, body, where, what):
    from codesign.errors import SpecError
    from codesign.study import load_study

    st = _study(tmp_path / "s.toml", body)
    with pytest.raises(SpecError) as exc:
        load_study(st)  # before any step runs
    assert f"{st}: {where}: " in str(exc.value) and what in str(exc.value)
    _refused(cli("study", "run", st, "--out", tmp_path / "o", "--quick"), f"{st}: {where}: ", what)
    assert not (tmp_path / "o").exists()


def test_study_breakdown_says_milliseconds():
    from codesign.study import _breakdown_md

    lines = _breakdown_md({"1": {"tpot_s": 0.002, "ttft_s": 0.05}})
    assert "milliseconds" in lines[0] and "seconds;" not in lines[0].replace("milliseconds", "")
    assert "2 ms" in lines[-1]


# ------------------------------------------------------------------ 4. model import / show
def test_model_not_utf8(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    png = tmp_path / "sub" / "x.json"
    png.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe")
    for cmd in ("import", "show"):
        err = _refused(cli("model", cmd, "sub/x.json"))
        assert err.strip() == "error: sub/x.json: not a UTF-8 text file (expected a Hugging Face config.json)"
    (tmp_path / "sub" / "x.toml").write_bytes(png.read_bytes())
    _refused(cli("model", "show", "sub/x.toml"), "sub/x.toml: not a UTF-8 text file")


def test_model_errors_name_the_typed_path(cli, tmp_path):
    cfg = tmp_path / "m.json"
    cfg.write_text(json.dumps({"model_type": "llama", "num_hidden_layers": 2, "vocab_size": 100,
                               "num_attention_heads": 4, "intermediate_size": 512}))
    for cmd in ("import", "show"):
        err = _refused(cli("model", cmd, cfg))
        assert err.strip() == f"error: {cfg}: hidden_size: missing (required)"


GENERIC = {"hidden_size": 256, "num_hidden_layers": 2, "vocab_size": 100, "num_attention_heads": 4,
           "intermediate_size": 512}


@pytest.mark.parametrize("cfg, needles", [
    ({"model_type": "mamba", "hidden_size": 768, "num_hidden_layers": 24, "vocab_size": 50280,
      "intermediate_size": 1536}, ["model_type: 'mamba' is a state-space", "decoder-only attention"]),
    ({**GENERIC, "model_type": "bert"}, ["model_type: 'bert' is an encoder-only model"]),
    ({**GENERIC, "model_type": "jamba"}, ["'jamba' is a hybrid"]),
    ({k: v for k, v in GENERIC.items() if k != "num_attention_heads"} | {"model_type": "newthing"},
     ["num_attention_heads: missing", "'newthing' is not a known decoder-only transformer"]),
    ({k: v for k, v in GENERIC.items() if k != "intermediate_size"} | {"model_type": "newthing"},
     ["intermediate_size: missing"]),
    ({**GENERIC, "model_type": "newthing", "architectures": ["NewThingForMaskedLM"]},
     ["architectures: ['NewThingForMaskedLM'] is not a causal language model"]),
])
def test_model_not_a_priceable_transformer(cli, tmp_path, cfg, needles):
    p = tmp_path / "c.json"
    p.write_text(json.dumps(cfg))
    for cmd in ("import", "show"):
        _refused(cli("model", cmd, p), f"{p}: ", *needles)


def test_model_generic_transformer_is_imported_with_a_note(cli, tmp_path):
    p = tmp_path / "c.json"
    p.write_text(json.dumps({**GENERIC, "model_type": "newthing", "architectures": ["NewThingForCausalLM"]}))
    rc, out, err = cli("model", "import", p)
    assert rc == 0, err
    assert "not one of the importer's known families" in out and 'architecture = "newthing"' in out


# ------------------------------------------------------------------ 5./6. numerics
def test_numerics_error_json_nonfinite_is_null(cli, tmp_path):
    # an exact quantisation (ones are exact in MXFP4) has an infinite SQNR: null, not a NaN/Infinity token
    src = tmp_path / "ones.npy"
    np.save(src, np.ones((1, 32), np.float32))
    rc, out, err = cli("numerics", "error", "--format", "mxfp4", src, "--json")
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["mse"] == 0.0 and doc["sqnr_db"] is None and doc["max_abs_error"] == 0.0
    assert "Infinity" not in out and "NaN" not in out
    # an input with no finite element measures nothing: refused (it printed nulls with exit 0), and
    # the error document is still valid JSON
    np.save(src := tmp_path / "nan.npy", np.full((1, 32), np.nan, np.float32))
    rc, out, err = cli("numerics", "error", "--format", "mxfp4", src, "--json")
    assert rc == 2 and "no finite element (of 32)" in json.loads(out)["error"]["message"], err


def test_numerics_error_help_documents_null(cli):
    from codesign.cli import build_parser

    parser = build_parser()
    sub = parser._subparsers._group_actions[0].choices["numerics"]
    helptext = sub._subparsers._group_actions[0].choices["error"].format_help()
    assert "null" in helptext


def test_numerics_text_file_is_not_npy(cli, tmp_path):
    src = tmp_path / "IN.npy"
    src.write_text("1, 2, 3\n")
    err = _refused(cli("numerics", "quantize", "--format", "mxfp4", src, tmp_path / "o.npy"))
    assert f"{src} is not a NumPy .npy array file" in err and "pickled" not in err


def test_numerics_output_under_a_file_names_the_file(cli, tmp_path):
    """Fresh-user trial of session 16: an output path under a regular file said 'directory ... does
    not exist', as if creating it would help; it names the file in the way."""
    import numpy as np

    src = tmp_path / "IN.npy"
    np.save(src, np.ones(64, np.float32))
    f = tmp_path / "regfile"
    f.write_text("")
    _refused(cli("numerics", "quantize", "--format", "mxfp4", src, f / "x.npy"), f"{f} exists and is not a directory")


def test_a_concurrency_listed_twice_is_refused(cli, tmp_path):
    """Fresh-user trial of session 16: concurrency = [4, 4, 2] priced and printed the point at 4 twice."""
    spec = tmp_path / "c.toml"
    spec.write_text(f'include = ["{SEARCH_SPEC.as_posix()}"]\n[workload]\nconcurrency = [4, 4, 2]\n')
    _refused(cli("evaluate", spec), "workload.concurrency", "lists 4 more than once")


def test_validate_names_its_option_for_an_unknown_cost_model(cli, tmp_path):
    """Fresh-user trial of session 16: `validate --cost-model nope` said 'error: <spec>: --cost-model: ...',
    though the user gave no spec; the option is named alone."""
    err = _refused(cli("validate", _csv(tmp_path / "m.csv", [IMX_ROW]), "--cost-model", "nope", "--out", tmp_path / "o"),
                   "error: --cost-model: no cost model named 'nope' is registered; available: ")
    assert "<spec>" not in err


def test_a_study_without_steps_is_refused(cli, tmp_path):
    """Fresh-user trial of session 16: `steps = []` ran, wrote an empty report and exited 0."""
    st = tmp_path / "s.toml"
    st.write_text('name = "s"\nsteps = []\n')
    _refused(cli("study", "run", st, "--out", tmp_path / "o"), f"{st}: steps: a study needs at least one")
    assert not (tmp_path / "o").exists()


# ------------------------------------------------------------------ 4. refused input leaves no --out behind
BAD_SEARCH = '[search.params]\n"memory.hbm.bandwith" = { low = "1 TB/s", high = "2 TB/s" }\n'


@pytest.mark.parametrize("cmd", ["optimize", "sweep"])
def test_a_refused_spec_leaves_no_output_directory(cli, tmp_path, cmd):
    spec = tmp_path / "typo.toml"
    spec.write_text(f'include = ["{SEARCH_SPEC.as_posix()}"]\n' + BAD_SEARCH)
    out = tmp_path / "runs" / "new"
    _refused(cli(cmd, spec, "--out", out), 'search.params."memory.hbm.bandwith": no such spec key')
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("cmd", ["optimize", "sweep"])
def test_a_search_bound_the_spec_itself_refuses_is_refused(cli, tmp_path, cmd):
    """Found by a fresh-user trial: a search over the HBM bandwidth from 0 TB/s passed the search
    checks (a bound may be 0 for the SRAM) and the search then died on the cost model's NaN for
    a chip with no memory bandwidth. A bound takes what the spec takes: zero SRAM, no zero HBM."""
    spec = tmp_path / "zero.toml"
    spec.write_text(f'include = ["{SEARCH_SPEC.as_posix()}"]\n[search.params]\n'
                    '"memory.hbm.bandwidth" = { low = "0 TB/s", high = "16 TB/s" }\n')
    out = tmp_path / "runs" / "new"
    _refused(cli(cmd, spec, "--out", out), f'{spec}: search.params."memory.hbm.bandwidth".low: must be > 0')
    assert not (tmp_path / "runs").exists()


def test_a_spec_the_cost_model_refuses_leaves_no_output_directory(cli, tmp_path):
    # a decode compute efficiency of 7 (700% of peak) is refused by the cost model, not the loader
    spec = tmp_path / "knob.toml"
    spec.write_text(f'include = ["{SEARCH_SPEC.as_posix()}"]\n[efficiency]\ncompute_decode = 7.0\n')
    _refused(cli("optimize", spec, "--out", tmp_path / "runs" / "new"), "efficiency.compute_decode")
    assert not (tmp_path / "runs").exists()


def test_a_worker_on_a_spec_the_cost_model_refuses_creates_no_study(cli, tmp_path):
    """``codesign worker`` created the journal before the cost model refused the spec; the
    corrected spec was then refused as "a different spec" by the empty study it left (plugin-author
    trial, session 36)."""
    spec = tmp_path / "knob.toml"
    spec.write_text(f'include = ["{SEARCH_SPEC.as_posix()}"]\n[efficiency]\ncompute_decode = 7.0\n')
    (tmp_path / "s").mkdir()
    journal = tmp_path / "s" / "x.journal"
    _refused(cli("worker", spec, "--storage", journal), f"{spec}: efficiency.compute_decode: must be")
    assert list((tmp_path / "s").iterdir()) == []


@pytest.mark.parametrize("cmd", ["optimize", "worker"])
def test_a_worker_names_every_problem_under_the_count_line_as_optimize(cli, tmp_path, cmd):
    """A spec with a bad [search] key (the loader's) and an unknown number format (judged against the
    plugins): ``codesign worker`` named the first alone, with no count line, where optimize, sweep and
    evaluate name both under ``SPEC: 2 problems`` (fresh-user trial, session 42). Text and --json."""
    spec = tmp_path / "two.toml"
    spec.write_text(f'include = ["{SEARCH_SPEC.as_posix()}"]\n[deployment]\nweights_format = "fp5"\n'
                    '[search]\ntrials = 0\n')
    (tmp_path / "s").mkdir()
    where = (["--storage", tmp_path / "s" / "x.journal"] if cmd == "worker" else ["--out", tmp_path / "s" / "run"])
    rc, out, err = cli(cmd, spec, *where)
    assert rc == 2 and out == "" and "Traceback" not in err, (rc, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 3, err
    assert lines[0] == f"error: {spec}: 2 problems"
    assert lines[1] == f"error: {spec}: search.trials: must be a whole number >= 1 (got 0)"
    assert lines[2].startswith(f"error: {spec}: deployment.weights_format: unknown number format 'fp5'; "), err
    rc, out, err = cli(cmd, spec, *where, "--json")
    doc = json.loads(out)["error"]
    assert rc == 2 and doc["exit_code"] == 2
    assert [(p["file"], p["key"]) for p in doc["problems"]] == [(str(spec), "search.trials"),
                                                              (str(spec), "deployment.weights_format")]
    assert list((tmp_path / "s").iterdir()) == []  # no journal, no run directory


def test_a_reference_file_the_cost_model_refuses_is_one_line(cli, tmp_path):
    """A ``search.reference`` spec file with a knob its cost model refuses: the reference warning
    ("priced with its own [efficiency] knobs") was printed above the refusal."""
    (tmp_path / "ref.toml").write_text(f'include = ["{_EXAMPLE.as_posix()}"]\n[efficiency]\ncompute_decode = 7.0\n')
    spec = tmp_path / "top.toml"
    spec.write_text(f'include = ["{_EXAMPLE.as_posix()}"]\n' + _SEARCH.replace("[search]\n", '[search]\nreference = "ref.toml"\n')
                    + '[search.params]\n"memory.hbm.bandwidth" = {low = "4 TB/s", high = "8 TB/s"}\n')
    for cmd in ("optimize", "sweep"):
        err = _refused(cli(cmd, spec, "--out", tmp_path / cmd), f"{tmp_path / 'ref.toml'}: efficiency.compute_decode: must be")
        assert err.rstrip().endswith(f"(the search.reference of {spec})"), err  # where the reference was named
        assert not (tmp_path / cmd).exists()


@pytest.mark.parametrize("kind", ["optimize", "grid"])
@pytest.mark.parametrize("name", ["../x", "a/b", "", "..", " "])
def test_a_study_step_name_that_is_no_file_name_is_refused_at_load(cli, tmp_path, kind, name):
    """A step's name is its output subdirectory (an optimize step's study and report, a grid's
    figure): name = "../x" wrote outside the study's output directory and "a/b" a nested one. A name
    with a path separator, "..", or an empty one is refused when the study is loaded, at steps.N.name
    (exit 2, one line, nothing written)."""
    from codesign.errors import SpecError
    from codesign.study import load_study

    spec = SEARCH_SPEC if kind == "optimize" else GRID_SPEC
    st = tmp_path / "s.toml"
    st.write_text(f'name = "s"\n[[steps]]\nkind = "grid"\nname = "ok"\nspec = "{GRID_SPEC.as_posix()}"\n{GOOD_AXES}'
                  f'[[steps]]\nkind = "{kind}"\nname = "{name}"\nspec = "{spec.as_posix()}"\n'
                  + (GOOD_AXES if kind == "grid" else ""))
    with pytest.raises(SpecError) as exc:
        load_study(st)
    assert [p[:2] for p in exc.value.problems] == [(str(st), "steps.1.name")]
    _refused(cli("study", "run", st, "--out", tmp_path / "o", "--quick"), f"{st}: steps.1.name: {name!r}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.toml"]


@pytest.mark.parametrize("name", ["../zz", ""])
def test_a_study_name_that_is_no_file_name_is_refused_as_the_default_output(cli, tmp_path, name):
    """Fresh-user trial of session 16: a study's name is its default output directory beside the
    study file; name = "../zz" wrote outside it and "" into the studies directory itself (a spec's
    and a step's name were already checked). Refused without --out (exit 2, nothing written);
    with --out the name is only a title."""
    st = tmp_path / "studies" / "s.toml"
    st.parent.mkdir()
    st.write_text(f'name = "{name}"\n[[steps]]\nkind = "grid"\nname = "g"\nspec = "{GRID_SPEC.as_posix()}"\n{GOOD_AXES}')
    _refused(cli("study", "run", st, "--quick"), f"{st}: name: {name!r} is the default output directory")
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["s.toml", "studies"]


def test_two_study_steps_of_one_name_are_refused_at_load(cli, tmp_path):
    """Review of session 16: two steps named alike wrote the same output subdirectory and the same
    data.json entry, the second silently replacing the first. Refused at load, at the second's
    steps.N.name (exit 2, nothing written)."""
    st = tmp_path / "s.toml"
    step = f'[[steps]]\nkind = "grid"\nname = "same"\nspec = "{GRID_SPEC.as_posix()}"\n{GOOD_AXES}'
    st.write_text('name = "s"\n' + step + step)
    _refused(cli("study", "run", st, "--out", tmp_path / "o", "--quick"),
             f"{st}: steps.1.name: 'same' is also the name of steps.0")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.toml"]


def test_a_study_with_a_refused_step_spec_leaves_no_output_directory(cli, tmp_path):
    spec = tmp_path / "typo.toml"
    spec.write_text(f'include = ["{SEARCH_SPEC.as_posix()}"]\n[memory.hbm]\nbandwidht = "8 TB/s"\n')
    st = tmp_path / "s.toml"
    st.write_text(f'name = "s"\n[[steps]]\nkind = "optimize"\nname = "o"\nspec = "{spec.as_posix()}"\n')
    _refused(cli("study", "run", st, "--out", tmp_path / "o", "--quick"),
             "memory.hbm.bandwidht: unknown key; did you mean 'bandwidth'?")
    assert not (tmp_path / "o").exists()


# ------------------------------------------------------------------ 7. validate: calibration path, header
def test_validate_calibration_is_a_directory(cli, tmp_path):
    d = tmp_path / "cals"
    d.mkdir()
    err = _refused(cli("validate", _csv(tmp_path / "m.csv", [IMX_ROW]), "--calibration", d))
    assert err.strip() == (f"error: {d}: is a directory; expected a calibration TOML file "
                           "(as `codesign calibrate MEASURED.csv --out FILE` writes)")
    assert "no such calibration file" not in err


@pytest.mark.parametrize("cmd", ["validate", "calibrate"])
def test_measured_header_with_a_duplicate_column_is_refused(cli, tmp_path, cmd):
    # csv.DictReader would keep the last "conc" cell (8) and drop the first (16) silently.
    # IMX_ROW's keys: point_id hardware model_key framework precision spec_method disagg isl osl (1-9),
    # conc (10), tp (11), ep dp_attention tput_per_gpu_tok_s mean_ttft_s mean_tpot_s (12-16)
    m = tmp_path / "dup.csv"
    m.write_text(",".join(list(IMX_ROW) + ["conc"]) + "\n" + ",".join(list(IMX_ROW.values()) + ["8"]) + "\n")
    extra = ["--out", tmp_path / "c.toml"] if cmd == "calibrate" else []
    err = _refused(cli(cmd, m, *extra))
    assert err.strip() == (f"error: {m}: duplicate column in the header: conc twice (columns 10, 17); "
                           "expected each column name once")
    # two names repeated, one of them three times (columns 17-19: tp, conc, tp)
    m.write_text(",".join(list(IMX_ROW) + ["tp", "conc", "tp"]) + "\n"
                 + ",".join(list(IMX_ROW.values()) + ["1", "8", "2"]) + "\n")
    _refused(cli(cmd, m, *extra), f"{m}: duplicate columns in the header: conc twice (columns 10, 18); "
                                  "tp 3 times (columns 11, 17, 19); expected each column name once")
    assert not (tmp_path / "c.toml").exists()


# ------------------------------------------------------------------ --json failures, internal errors
def test_json_failure_is_one_json_document_on_stdout(cli, tmp_path):
    # a script that asked for --json reads the error from stdout (README: "--json where a script will
    # read the output"); stderr keeps the one human line
    spec = tmp_path / "frac.toml"
    spec.write_text(f'include = ["{SEARCH_SPEC.as_posix()}"]\n[workload]\nconcurrency = [1, 2.5]\n')
    rc, out, err = cli("evaluate", spec, "--json")
    assert rc == 2 and len(err.strip().splitlines()) == 1
    doc = json.loads(out)
    assert doc == {"error": {"message": f"{spec}: workload.concurrency.1: expected a whole number (got 2.5)",
                             "exit_code": 2,
                             # a spec's problems also one by one, as the message's line names them
                             "problems": [{"file": str(spec), "key": "workload.concurrency.1",
                                           "message": "expected a whole number (got 2.5)"}]}}
    rc, out, err = cli("validate", tmp_path / "absent.csv", "--json")
    assert rc == 2 and json.loads(out)["error"]["message"] == f"{tmp_path / 'absent.csv'}: no such file"
    rc, out, err = cli("evaluate", spec)  # without --json, stdout stays empty
    assert rc == 2 and out == ""


def test_a_bug_is_exit_code_3_without_a_traceback(cli, monkeypatch):
    # codesign.ExitCode.INTERNAL_ERROR: an exception that is not a CodesignError is a bug in codesign
    # or a plugin; one line names it (and where), --debug shows the traceback
    import codesign.cli.plugins as plugins_cli

    def broken(pm):
        return 1 / 0

    monkeypatch.setattr(plugins_cli, "collect", broken)
    rc, out, err = cli("plugins", "list", "--json")
    assert rc == 3 and "Traceback" not in err
    assert err.startswith("internal error: ZeroDivisionError: division by zero (at ") and "--debug" in err
    assert json.loads(out) == {"error": {"message": err.splitlines()[0], "exit_code": 3}}
    rc, out, err = cli("--debug", "plugins", "list")  # the traceback, and still exit 3
    assert rc == 3 and "Traceback" in err and "ZeroDivisionError: division by zero" in err
    assert "rerun with" not in err  # it was rerun with --debug


def test_debug_shows_the_traceback_and_keeps_the_exit_code(cli, tmp_path):
    """`codesign --debug` re-raised, so bad input exited 1 (Python's code for an uncaught
    exception), which `optimize` uses for "no feasible design" (fresh-user trial). It prints the
    traceback and exits as without --debug: 2 for bad input."""
    missing = tmp_path / "nonexistent.toml"
    rc, out, err = cli("evaluate", missing)
    assert rc == 2 and "Traceback" not in err
    rc, out, err = cli("--debug", "evaluate", missing)
    assert rc == 2 and "Traceback" in err and "error: " in err, err


def test_interrupt_exits_130_and_names_the_study_only_for_searches(cli, monkeypatch):
    # Ctrl-C: exit 130; "completed trials are kept in the study storage" only where there is a study
    # (optimize, worker, study), a plain "interrupted" elsewhere (validate, sweep, plugins ...)
    import codesign.cli.plugins as plugins_cli

    def interrupted(pm):
        raise KeyboardInterrupt

    monkeypatch.setattr(plugins_cli, "collect", interrupted)
    rc, out, err = cli("plugins", "list")
    assert rc == 130 and err.strip() == "interrupted"


def test_usage_errors_are_one_line_and_json_too(cli):
    # argparse's own refusals (missing argument, unknown option, bad choice) keep the contract: one
    # `error:` line naming the command's --help, exit 2, and with --json the error document on stdout
    rc, out, err = cli("evaluate", "--json")
    assert rc == 2 and out and json.loads(out)["error"] == {
        "message": "codesign evaluate: the following arguments are required: spec", "exit_code": 2}
    assert err.strip().splitlines() == ["error: codesign evaluate: the following arguments are required: spec "
                                        "(see `codesign evaluate --help`)"]
    rc, out, err = cli("optimize", SEARCH_SPEC, "--trials", "many")
    assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1 and "--trials" in err
    rc, out, err = cli("--version")
    assert rc == 0 and out.startswith("codesign ")
    # a count on the command line takes a whole-valued float as a spec does (20.0), not 2.5 or 1e30
    model = SPECS / "models" / "gpt-oss-120b.toml"
    rc, out, err = cli("model", "show", model, "--isl", "1024.0", "--json")
    assert rc == 0 and json.loads(out) == json.loads(cli("model", "show", model, "--isl", "1024", "--json")[1])
    for bad in ("2.5", "1e30"):
        rc, out, err = cli("model", "show", model, "--isl", bad)
        assert rc == 2 and f"argument --isl: expected a whole number, got '{bad}'" in err


def test_a_spec_and_a_study_mistaken_for_each_other_are_one_line(cli, tmp_path):
    # `study run` on a spec blamed its included files in 7 lines; `optimize` on a study listed 7
    # missing/unknown keys. One line each, naming the right command
    rc, out, err = cli("study", "run", SEARCH_SPEC, "--out", tmp_path / "st")
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "not a study" in err and "codesign optimize" in err
    assert not (tmp_path / "st").exists()
    study = REPO / "studies" / "kv-locality.toml"
    rc, out, err = cli("optimize", study, "--out", tmp_path / "o")
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "a study, not a spec" in err
    assert "codesign study run" in err


def test_an_unknown_flag_of_a_sub_command_names_that_sub_command(cli):
    """argparse reports a sub-command's unknown flag from the top-level parser; the error names the
    sub-command whose --help lists the flags (it said `codesign --help`)."""
    rc, out, err = cli("evaluate", "x.toml", "--bogus")
    assert rc == 2 and err.strip() == ("error: codesign evaluate: unrecognized arguments: --bogus "
                                       "(see `codesign evaluate --help`)"), err
    rc, out, err = cli("--debug", "model", "show", "x.toml", "--bogus", "--json")  # the innermost one
    assert rc == 2 and "see `codesign model show --help`" in err
    assert json.loads(out)["error"]["message"] == "codesign model show: unrecognized arguments: --bogus"


def test_an_option_of_another_command_says_which_takes_it_and_guesses_a_cost_model(cli):
    """`optimize SPEC --cost-model rooflin` said only "unrecognized arguments" (fresh-user trial,
    session 46): optimize reads its cost model from the spec. The line now names the commands that
    take the option, the spec key that does its job here, and the registered name the typo stands
    for; a misspelt option of the command itself gets the option it stands for."""
    # 'analytcal' (one letter dropped; the built-in model, so the test needs no example plugin)
    head = "error: codesign optimize: unrecognized arguments: --cost-model analytcal; "
    rc, out, err = cli("optimize", SEARCH_SPEC, "--cost-model", "analytcal")
    assert rc == 2 and err.strip() == (
        head + "--cost-model is an option of `codesign evaluate` and `codesign validate`; `codesign optimize` "
        "takes the cost model from its spec's deployment.cost_model; 'analytcal' is no registered cost model: "
        "did you mean 'analytical'? (see `codesign optimize --help`)"), err
    # a registered name gets no guess; sweep reads a spec too
    rc, out, err = cli("sweep", SEARCH_SPEC, "--cost-model=analytical")
    assert rc == 2 and err.strip().endswith(
        "`codesign sweep` takes the cost model from its spec's deployment.cost_model (see `codesign sweep --help`)"), err
    rc, out, err = cli("optimize", SEARCH_SPEC, "--trails", "3")  # 'trails' is 'trials' with two letters swapped
    assert rc == 2 and "unrecognized arguments: --trails 3; did you mean --trials? (see" in err, err
    rc, out, err = cli("evaluate", SEARCH_SPEC, "--cost_model", "roofline")
    assert rc == 2 and "; did you mean --cost-model? (see" in err, err
    rc, out, err = cli("sweep", SEARCH_SPEC, "--trials", "3", "--json")  # sweep counts --points
    assert rc == 2 and json.loads(out)["error"]["message"] == (
        "codesign sweep: unrecognized arguments: --trials 3; --trials is an option of `codesign optimize` "
        "and `codesign worker`")


def test_a_misspelt_hook_or_numerics_format_gets_a_guess(cli, tmp_path):
    """`plugins list --hook` with no such hook listed no plugin (exit 0), also for the spelling the
    table's hooks column shows (`cost_models`); `numerics --format mxfp44` listed the formats with no
    guess (fresh-user trial, session 46)."""
    rc, out, err = cli("plugins", "list", "--json", "--hook", "cost_models")
    assert rc == 0 and {p["name"] for p in json.loads(out)["plugins"]} >= {"analytical"}
    hooks = "codesign_baselines, codesign_cost_models, codesign_number_formats, codesign_samplers"
    err = _refused(cli("plugins", "list", "--hook", "codesign_cost_model"))
    assert err.strip() == ("error: --hook: no hook named 'codesign_cost_model' (did you mean "
                           f"'codesign_cost_models'?); hooks: {hooks}"), err
    err = _refused(cli("plugins", "list", "--hook", "zzz"))
    assert err.strip() == f"error: --hook: no hook named 'zzz'; hooks: {hooks}", err
    src = tmp_path / "in.npy"
    np.save(src, np.ones((1, 32), np.float32))
    _refused(cli("numerics", "quantize", "--format", "mxfp44", src, tmp_path / "o.npy"),
             "error: unknown number format 'mxfp44' (did you mean 'mxfp4'?); registered: bf16, ")


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the swallowed Ctrl-C
def test_a_ctrl_c_that_a_callback_swallowed_still_ends_the_command_with_130(cli, monkeypatch):
    """Python ignores an exception raised in a finaliser ("Exception ignored in ..."): a Ctrl-C that
    lands in one (JAX's gc hook, seen once on evaluate) let the command run on and exit 0."""
    import os
    import signal
    import time

    import codesign.cli.evaluate as ev

    class Finaliser:
        def __del__(self):
            os.kill(os.getpid(), signal.SIGINT)  # delivered while this finaliser runs ...
            time.sleep(0.05)

    def run(args):
        Finaliser()  # ... and swallowed there; the command itself finishes normally
        return 0

    monkeypatch.setattr(ev, "run", run)
    # Python's own Ctrl-C handler, whatever pytest inherited (a run started with `&` from a script
    # inherits SIG_IGN, under which this Ctrl-C would be ignored, as it should: see below)
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        rc, out, err = cli("evaluate", "x.toml")
        assert rc == 130 and "interrupted" in err, err
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the handler is put back
    finally:
        signal.signal(signal.SIGINT, before)


@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM"])
def test_a_command_started_with_a_signal_ignored_keeps_ignoring_it(cli, monkeypatch, signame):
    """A process started under ``nohup`` or with ``&`` from a non-interactive shell inherits SIGINT
    ignored (POSIX: the shell sets SIG_IGN for background jobs without job control); the CLI must not
    replace that with its own handler, which made such a run interruptible by a stray SIGINT. A
    SIGTERM its starter ignores stays ignored likewise."""
    import os
    import signal

    import codesign.cli.evaluate as ev

    signum = getattr(signal, signame)

    def run(args):
        os.kill(os.getpid(), signum)  # ignored: the command finishes normally
        return 0

    monkeypatch.setattr(ev, "run", run)
    before = signal.signal(signum, signal.SIG_IGN)
    try:
        rc, out, err = cli("evaluate", "x.toml")
        assert signal.getsignal(signum) is signal.SIG_IGN
    finally:
        signal.signal(signum, before)
    assert rc == 0, err


def test_sigterm_ends_a_command_as_ctrl_c_does_with_143_and_the_handler_is_put_back(cli, monkeypatch):
    """SIGTERM (kill, timeout, a batch scheduler) takes Ctrl-C's path: the study line for a search,
    exit 143 (128 + 15); the handler in place before is restored. (The subprocess test of a real
    optimize run is test_storage's test_sigterm_mid_run_exits_143_keeps_the_trials_and_resumes.)"""
    import os
    import signal

    import codesign.cli.worker as worker

    def run(args):
        os.kill(os.getpid(), signal.SIGTERM)
        return 0

    monkeypatch.setattr(worker, "run", run)
    heard = []

    def before(signum, frame):  # stands for whatever handler the caller had (this one exits nothing)
        heard.append(signum)

    old = signal.signal(signal.SIGTERM, before)
    try:
        rc, out, err = cli("worker", "x.toml", "--storage", "x.journal")
        assert signal.getsignal(signal.SIGTERM) is before
    finally:
        signal.signal(signal.SIGTERM, old)
    assert rc == 143 and not heard, (rc, err)
    assert err.strip() == "interrupted: completed trials, if any, are kept in the study storage; rerun to resume"


def test_an_interrupted_command_with_json_still_prints_one_document(cli, monkeypatch):
    """Fresh-user trial of session 16: `--json` printed nothing on stdout when SIGTERM or Ctrl-C ended
    the command, where bad input gets {"error": {"message", "exit_code"}}: a script parsing stdout
    got an empty string. It gets the same document, with exit_code 143 (or 130)."""
    import os
    import signal

    import codesign.cli.worker as worker

    def run(args):
        os.kill(os.getpid(), signal.SIGTERM)
        return 0

    monkeypatch.setattr(worker, "run", run)
    rc, out, err = cli("worker", "x.toml", "--storage", "x.journal", "--json")
    assert rc == 143, err
    doc = json.loads(out)
    assert doc["error"]["exit_code"] == 143 and doc["error"]["message"].startswith("interrupted"), doc


def test_a_second_signal_does_not_break_the_clean_up_of_the_first(cli, monkeypatch):
    """Review of session 16: a second SIGTERM (a double kill) or Ctrl-C during the clean-up the first
    one started (stopping --workers children) raised again and cut that clean-up short. Only the
    first signal raises; the command still ends as interrupted by it (exit 143)."""
    import os
    import signal

    import codesign.cli.worker as worker

    cleaned = []

    def run(args):
        try:
            os.kill(os.getpid(), signal.SIGTERM)
        except KeyboardInterrupt:
            os.kill(os.getpid(), signal.SIGINT)  # arrives while this clean-up runs
            cleaned.append(True)
            raise
        return 0

    monkeypatch.setattr(worker, "run", run)
    rc, out, err = cli("worker", "x.toml", "--storage", "x.journal")
    assert cleaned == [True] and rc == 143, (cleaned, rc, err)
    assert "Traceback" not in err


@pytest.mark.parametrize("name", ["../escaped", "a/b", "..", "a\\\\b"])
@pytest.mark.parametrize("command", ["optimize", "sweep"])
def test_a_spec_name_that_is_no_file_name_is_refused_as_the_default_output_directory(cli, tmp_path, monkeypatch, name, command):
    """The default --out is runs/<spec name>: name = "../escaped" wrote ../escaped/study.journal
    outside runs/ (fresh-user trial). Such a name is refused (exit 2, the file and key named), and
    nothing is written; with --out it is only a name."""
    from conftest import SPECS

    monkeypatch.chdir(tmp_path)
    spec = tmp_path / "s.toml"
    spec.write_text(f'include = ["{(SPECS / "jalapeno-gpt-oss-120b.toml").as_posix()}"]\nname = "{name}"\n')
    extra = ["--trials", "2"] if command == "optimize" else ["--points", "8"]
    rc, out, err = cli(command, spec, *extra)
    assert rc == 2, err
    assert f"{spec}: name: " in err and "one file name" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.toml"]


def test_a_number_format_key_searched_as_a_range_names_choices(cli, tmp_path):
    """A format is a name: low/high on deployment.kv_cache_format said Python's "could not convert
    string to float: 'fp8_e4m3'"; it names the key and says to give choices (exit 2)."""
    from conftest import SPECS

    spec = tmp_path / "f.toml"
    spec.write_text(f'include = ["{(SPECS / "jalapeno-gpt-oss-120b.toml").as_posix()}"]\n'
                    '[search.params."deployment.kv_cache_format"]\nlow = "fp8_e4m3"\nhigh = "nvfp4"\n')
    rc, out, err = cli("evaluate", spec)
    assert rc == 2, err
    assert 'search.params."deployment.kv_cache_format".low: a number-format key takes choices' in err, err
    assert "could not convert" not in err


def test_numerics_quantize_refuses_to_overwrite_its_input_or_an_empty_output(cli, tmp_path):
    """Fresh-user trial of session 16: `numerics quantize a.npy a.npy` replaced the input array with
    its quantised values (exit 0), and an empty OUT said ': is a directory'. Both are refused, the
    input untouched, as `calibrate X.csv --out X.csv` and every `--out ''` are."""
    import numpy as np

    a = tmp_path / "a.npy"
    np.save(a, np.linspace(-3, 3, 64, dtype=np.float32))
    before = a.read_bytes()
    _refused(cli("numerics", "quantize", "--format", "mxfp4", a, a), f"output {a}: is the input file {a}")
    assert a.read_bytes() == before
    _refused(cli("numerics", "quantize", "--format", "mxfp4", a, ""), "argument OUT: '': empty; give a path")


@pytest.mark.parametrize("extra", [[], ["--json"]])
def test_a_closed_stdout_is_no_failure(extra):
    """``codesign evaluate ... | head -1``: rich ended the process with exit 1 when its stdout was
    closed ("no feasible design" here), and a JSON dump left "Exception ignored ... BrokenPipeError"
    on stderr (fresh-user trial, session 26). The reader has what it wanted: exit 0, stderr quiet.
    The pipe is closed before the command writes, so its first write fails."""
    import subprocess
    import sys

    cmd = [sys.executable, "-c", "import sys; from codesign.cli import entry; sys.argv[0] = 'codesign'; entry()",
           "evaluate", str(SPECS / "examples" / "gb200-gpt-oss-120b.toml"), *extra]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=300) == 0, err
    assert "Traceback" not in err and "Exception ignored" not in err and "Broken" not in err, err


# ------------------------------------------------- evaluate refuses the [search] keys optimize refuses
@pytest.mark.parametrize("table, key, why", [
    ("params", "memory.hbm.bandwith", "no such spec key"),                              # a typo
    ("params", "model.hidden_size", "the cost model 'analytical' cannot vary this key"),  # a spec key, not searchable
    ("envelope", "deployment.tpp",  # the closest key it can vary (fresh-user trial, session 31)
     "the envelope takes deployment keys the cost model can vary; did you mean 'deployment.tp'? (it can vary "),
])
def test_evaluate_refuses_a_search_key_that_optimize_refuses(cli, tmp_path, table, key, why):
    """`codesign evaluate` priced a spec whose [search.params] misspelt a key, which `codesign
    optimize` then refused (fresh-user trial, session 27): it names the same key, the same way, and
    the file that wrote it (the including spec here, not the flagship it includes)."""
    value = '{ low = 1, high = 2 }' if table == "params" else "[1, 2]"
    spec = tmp_path / "typo.toml"
    spec.write_text(f'include = ["{SEARCH_SPEC.as_posix()}"]\n[search.{table}]\n"{key}" = {value}\n')
    line = f'{spec}: search.{table}."{key}": {why}'
    _refused(cli("evaluate", spec), line)
    _refused(cli("optimize", spec, "--out", tmp_path / "o"), line)
    # included by another spec, the line still names the file that wrote the key
    top = tmp_path / "top.toml"
    top.write_text('include = ["typo.toml"]\n')
    _refused(cli("evaluate", top), line)
    _refused(cli("optimize", top, "--out", tmp_path / "o"), line)


def test_evaluate_still_prices_a_spec_whose_search_is_sound(cli, tmp_path):
    rc, out, err = cli("evaluate", SEARCH_SPEC, "--json")
    assert rc == 0 and json.loads(out)["points"], err


@pytest.mark.parametrize("key, value, why", [
    ("cost_model", "nosuch", "no cost model named 'nosuch' is registered"),
    ("weights_format", "nosuchfmt", "unknown number format 'nosuchfmt'"),
])
def test_a_bad_name_in_an_included_file_is_blamed_on_that_file(cli, tmp_path, key, value, why):
    """``cost_model = "nosuch"`` in an included file was reported against the top-level spec, which
    never wrote it (fresh-user trial, session 31): the line names the file that set the key, as the
    loader's own errors do, in evaluate and optimize."""
    inc = tmp_path / "inc.toml"
    inc.write_text(f'include = ["{SEARCH_SPEC.as_posix()}"]\n[deployment]\n{key} = "{value}"\n')
    top = tmp_path / "top.toml"
    top.write_text('include = ["inc.toml"]\n')
    line = f"{inc}: deployment.{key}: {why}"
    _refused(cli("evaluate", top), line)
    _refused(cli("optimize", top, "--out", tmp_path / "o"), line)


# --------------------------------------- a bad number format named in the file that wrote it
_EXAMPLE = SPECS / "examples" / "gb200-gpt-oss-120b.toml"
_SEARCH = ('[search]\ntrials = 3\nobjectives = [{metric = "peak_mixed_tok_s_per_kw", direction = "maximize"}]\n'
           '[[search.constraints]]\nmetric = "peak_power_w"\nmax = "1200 W"\n'
           '[[search.constraints]]\nmetric = "area_mm2"\nmax = "1716 mm**2"\n')


def test_a_bad_format_in_an_included_search_table_is_named_there(cli, tmp_path):
    """An unregistered format among an included [search.params] choices was blamed on the spec
    that included the table (session 33)."""
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "search.toml").write_text(
        _SEARCH + '[search.params]\n"deployment.activations_format" = {choices = ["fp8_e4m3", "fp9"]}\n')
    spec = tmp_path / "top.toml"
    spec.write_text(f'include = ["{_EXAMPLE.as_posix()}", "inc/search.toml"]\n')
    err = _refused(cli("optimize", spec, "--out", tmp_path / "o"),
                   'search.params."deployment.activations_format": unknown number format \'fp9\'')
    assert err.startswith(f"error: {tmp_path / 'inc' / 'search.toml'}:") or "inc/search.toml:" in err, err
    assert "top.toml" not in err, err


def test_a_bad_format_in_a_references_include_is_named_there(cli, tmp_path):
    """The reference spec's own include wrote the bad format: it was blamed on the reference file."""
    (tmp_path / "dep.toml").write_text('[deployment]\nactivations_format = "fp9"\n')
    (tmp_path / "ref.toml").write_text(f'include = ["{_EXAMPLE.as_posix()}", "dep.toml"]\n')
    spec = tmp_path / "top.toml"
    spec.write_text(f'include = ["{_EXAMPLE.as_posix()}"]\n' + _SEARCH.replace("[search]\n", '[search]\nreference = "ref.toml"\n')
                    + '[search.params]\n"memory.hbm.bandwidth" = {low = "4 TB/s", high = "8 TB/s"}\n')
    err = _refused(cli("optimize", spec, "--out", tmp_path / "o"),
                   "deployment.activations_format: unknown number format 'fp9'")
    assert "dep.toml: deployment.activations_format" in err and "ref.toml" not in err, err


def test_a_hardware_key_in_the_envelope_points_to_search_params(cli, tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text(f'include = ["{_EXAMPLE.as_posix()}"]\n' + _SEARCH
                    + '[search.params]\n"deployment.tp" = {choices = [4, 8]}\n'
                      '[search.envelope]\n"memory.hbm.bandwidth" = ["8 TB/s"]\n')
    _refused(cli("optimize", spec, "--out", tmp_path / "o"),
             'search.envelope."memory.hbm.bandwidth": the envelope takes deployment keys',
             "a hardware key is searched in [search.params]")


def test_the_power_bound_suggested_for_a_searched_tdp_is_the_highest_tdp(cli, tmp_path):
    """With chip.tdp searched over 700-1000 W, each design is priced at its own TDP and the budget
    to suggest is 1000 W, not the base spec's 1200 W."""
    spec = tmp_path / "s.toml"
    spec.write_text(f'include = ["{_EXAMPLE.as_posix()}"]\n[search]\ntrials = 1\n'
                    'objectives = [{metric = "peak_mixed_tok_s_per_kw", direction = "maximize"}]\n'
                    '[search.params]\n"chip.tdp" = {low = "700 W", high = "1000 W"}\n')
    from codesign.search import budget_warnings
    from codesign.spec import load_spec

    (power, _area) = budget_warnings(load_spec(spec))
    assert "priced at its own chip.tdp" in power and 'max = "1000 W"' in power, power


@pytest.mark.parametrize("example, conc, fate", [
    ("gb200-gpt-oss-120b.toml", "[1, 8, 100000]", "KV slots (KV cache; more users queue)"),
    ("gb200-gpt-oss-120b-roofline.toml", "[1, 8, 100000]", "KV slots (KV cache; more users do not fit)"),
    ("gb200-gpt-oss-120b.toml", "[1, 8]", "KV slots (KV cache) "),
])
def test_the_evaluate_summary_says_what_happens_to_users_beyond_the_slots(cli, tmp_path, example, conc, fate):
    """The analytical model queues users beyond the KV slots; the roofline example refuses those
    points. The line said 'more users queue' for both (session 32); it now reads it off the points."""
    if "roofline" in example:
        pytest.importorskip("codesign_roofline")
    spec = tmp_path / "s.toml"
    spec.write_text(f'include = ["{(SPECS / "examples" / example).as_posix()}"]\n[workload]\nconcurrency = {conc}\n')
    rc, out, err = cli("evaluate", spec)
    assert fate in " ".join(out.split()), out


@pytest.mark.parametrize("cmd", ["optimize", "sweep"])
def test_a_refused_search_prints_no_warnings_above_its_refusal(cli, tmp_path, cmd):
    """A hardware search without power or area bounds is warned about; when the same [search] is
    refused (a key no cost model can vary), the warnings printed above the refusal of a run that
    never started (session 32). Only the refusal now, on one line."""
    spec = tmp_path / "s.toml"
    spec.write_text(f'include = ["{_EXAMPLE.as_posix()}"]\n[search]\ntrials = 2\n'
                    'objectives = [{metric = "peak_mixed_tok_s_per_kw", direction = "maximize"}]\n'
                    '[search.params]\n"memory.hbm.bandwidth" = {low = "4 TB/s", high = "8 TB/s"}\n'
                    '"model.num_layers" = {low = 10, high = 20}\n')
    args = (cmd, spec, "--out", tmp_path / "o") + (("--points", "10") if cmd == "sweep" else ())
    _refused(cli(*args), 'search.params."model.num_layers"')


def test_an_output_directory_that_takes_no_file_is_refused_before_the_run(tmp_path):
    """A read-only output directory let sweep, optimize, validate and calibrate run to the end and
    then fail with exit 3 "internal error: PermissionError" (calibrate after its whole fit; fresh-user
    trial, session 35). Each is refused first, exit 2, naming the option and the directory. Run
    without the root override of file permissions (CI runs as root), as a user would meet it."""
    import os
    import shutil
    import subprocess
    import sys

    prefix = []
    if os.geteuid() == 0:
        if not shutil.which("setpriv"):
            pytest.skip("root without setpriv: file permissions cannot be enforced")
        prefix = ["setpriv", "--bounding-set=-dac_override,-dac_read_search",
                  "--inh-caps=-dac_override,-dac_read_search"]
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    spec = SPECS / "jalapeno-gpt-oss-120b.toml"
    measured = REPO / "plugins" / "codesign_baseline" / "calibration.toml"  # any file: refused first
    runs = [(["sweep", spec, "--points", "4", "--out", ro], f"--out {ro}: cannot write there: permission denied"),
            (["optimize", spec, "--trials", "2", "--out", ro / "new"],
             f"--out {ro / 'new'}: cannot write there (in {ro}): permission denied"),
            (["calibrate", measured, "--out", ro / "cal.toml"],
             f"--out {ro / 'cal.toml'}: cannot write there (in {ro}): permission denied")]
    try:
        for argv, line in runs:
            res = subprocess.run(prefix + [sys.executable, "-m", "codesign", *map(str, argv)],
                                 capture_output=True, text=True, timeout=300)
            assert res.returncode == 2 and res.stderr.strip().splitlines() == [f"error: {line}"], (argv, res.stderr)
        assert list(ro.iterdir()) == []
    finally:
        ro.chmod(0o755)


@pytest.mark.parametrize("command", ["evaluate", "optimize", "sweep", "validate", "calibrate"])
def test_every_command_s_help_gives_the_exit_code_of_a_bug(command):
    """The README gives exit 3 for a bug in codesign or a plugin (one ``internal error:`` line), and
    the commands return it, but their --help listed every exit code but that one (fresh-user trial,
    session 39)."""
    from codesign.cli import build_parser
    from codesign.errors import ExitCode

    text = " ".join(build_parser()._subparsers._group_actions[0].choices[command].format_help().split())
    assert f"{int(ExitCode.INTERNAL_ERROR)} a bug in codesign or a plugin" in text, text


def test_efficiency_knobs_under_a_cost_model_that_reads_none_are_refused_by_every_search(cli, tmp_path):
    """``deployment.cost_model = "roofline"`` beside ``[efficiency]``: optimize, sweep and worker
    searched with the roofline model, which reads no knobs, and said nothing of them (fresh-user
    trial, session 40; evaluate's ``--cost-model`` case is in test_evaluate.py). Refused before any
    output; a baseline reference (``reference = "gb200"``) still gives the roofline its hardware without
    the analytical model's calibrated knobs, so the same search without [efficiency] is accepted."""
    pytest.importorskip("codesign_roofline")
    from codesign.baselines import reference_spec
    from codesign.evaluation import check_priceable
    from codesign.pluginmanager import get_plugin_manager
    from codesign.spec import load_spec

    body = (f'include = ["{_EXAMPLE.as_posix()}"]\n[deployment]\ncost_model = "roofline"\n'
            + _SEARCH.replace("[search]\n", '[search]\nreference = "gb200"\n')
            + '[search.params]\n"memory.hbm.bandwidth" = {low = "4 TB/s", high = "8 TB/s"}\n')
    spec = tmp_path / "roof.toml"
    spec.write_text(body + "[efficiency]\ncompute_decode = 0.5\n")
    why = (f"{spec}: efficiency: [efficiency] sets compute_decode, and deployment.cost_model 'roofline' reads no "
           "efficiency knobs (it would price without them); remove [efficiency]")
    for cmd in ("optimize", "sweep"):
        _refused(cli(cmd, spec, "--out", tmp_path / cmd), why)
        assert not (tmp_path / cmd).exists()
    (tmp_path / "s").mkdir()
    _refused(cli("worker", spec, "--storage", tmp_path / "s" / "x.journal"), why)
    assert list((tmp_path / "s").iterdir()) == []
    ok = tmp_path / "ok.toml"
    ok.write_text(body)
    pm = get_plugin_manager()
    s = load_spec(ok)
    ref = reference_spec(s, "gb200")
    assert ref.efficiency == {} and ref.deployment.cost_model == "roofline"
    check_priceable(s, pm=pm)
    check_priceable(ref, pm=pm)


def _parsers(parser, path=()):
    """``(command words, parser)`` of every sub-command under ``parser``, parents included."""
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, p in action.choices.items():
                yield (*path, name), p
                yield from _parsers(p, (*path, name))


def test_every_commands_help_lists_its_exit_codes():
    """``worker``, ``study run``, ``model *``, ``numerics *`` and ``plugins list`` gave no exit codes
    in ``--help``, and ``validate`` and ``calibrate`` left out 143, which every command returns on
    SIGTERM (``codesign.cli.main`` installs ``interrupts.catch`` for all of them; fresh-user trial,
    session 40). Each command lists 2, 3, 130 and 143, and 1 only where its code path returns
    ``ExitCode.NO_RESULT`` (evaluate, optimize, sweep); a command with actions points to them."""
    from codesign.cli import build_parser

    seen = []
    for words, p in _parsers(build_parser()):
        text = " ".join(p.format_help().split())
        assert "Exit codes:" in text, words
        leaf = not any(a.__class__.__name__ == "_SubParsersAction" for a in p._actions)
        if not leaf:
            assert f"those of the ACTION (`codesign {' '.join(words)} ACTION --help`)" in text, words
            continue
        seen.append(" ".join(words))
        codes = text[text.index("Exit codes:"):]
        for code in ("0 ", "; 2 ", "; 3 a bug in codesign or a plugin", "130 interrupted (Ctrl-C)",
                     "143 terminated (SIGTERM)"):
            assert code in codes, (words, code, codes)
        assert ("; 1 no feasible" in codes) == (words[0] in ("evaluate", "optimize", "sweep")), (words, codes)
    assert {"worker", "study run", "model import", "model show", "numerics quantize", "numerics error",
            "numerics formats", "plugins list", "validate", "calibrate"} <= set(seen)


def test_top_level_help_lists_the_exit_codes():
    """``codesign --help`` gave no exit codes where every command's help does (fresh-user trial,
    session 41). It lists 0, 2, 3, 130 and 143, and 1 for exactly the commands whose own help lists
    it (read from their parsers, not written here)."""
    import re

    from codesign.cli import build_parser

    parser = build_parser()
    text = " ".join(parser.format_help().split())
    assert "Exit codes:" in text, text
    codes = text[text.index("Exit codes:"):]
    for code in ("0 ", "; 2 bad input", "; 3 a bug in codesign or a plugin", "130 interrupted (Ctrl-C)",
                 "143 terminated (SIGTERM)", "`codesign COMMAND --help`"):
        assert code in codes, (code, codes)
    one = {words[0] for words, p in _parsers(parser) if "; 1 no feasible" in " ".join(p.format_help().split())}
    assert one == {"evaluate", "optimize", "sweep"}, one
    said = re.search(r"; 1 no feasible design \(([^)]*) only", codes)
    assert said and set(re.split(r", | and ", said.group(1))) == one, codes


def test_sweeps_help_and_its_check_give_one_most_points(cli, tmp_path):
    """The command list said sweep evaluates "up to ~10^6 designs" while --points' help said "at
    most 10^7", which the command takes (fresh-user trial, session 41). The summary and the option's
    help give the same figure, and it is the one the command enforces: one more is refused (exit 2,
    naming --points), before anything is written."""
    import re

    from codesign.cli import build_parser

    parser = build_parser()
    summary = " ".join(parser.format_help().split())
    most = re.search(r"sweep evaluate up to (\S+) designs", summary)
    sweep = dict(_parsers(parser))[("sweep",)]
    points = " ".join(next(a.help for a in sweep._actions if "--points" in a.option_strings).split())
    at_most = re.search(r"at most (\S+?)[;,)]", points)
    assert most and at_most, (summary, points)
    assert most.group(1) == at_most.group(1), (most.group(1), at_most.group(1))
    base, exp = at_most.group(1).split("^")
    n = int(base) ** int(exp)
    rc, _, err = cli("sweep", SPECS / "jalapeno-gpt-oss-120b.toml", "--points", n + 1, "--out", tmp_path / "s")
    assert rc == 2 and "--points" in err and f"got {n + 1}" in err, err
    assert not (tmp_path / "s").exists()


@pytest.mark.parametrize("code, rc", [("ENOSPC", 2), ("EDQUOT", 2), ("EROFS", 2), ("EBADF", 3)])
def test_a_full_disk_is_the_machines_not_a_bug(cli, monkeypatch, code, rc):
    """A full disk under a running command (optuna's journal on a full tmpfs, fresh-user trial,
    session 41) was reported as "a bug in codesign or a plugin" (exit 3). A full disk, a quota or a
    read-only file system is the machine's: one line naming the file and what to do, exit 2. Any
    other OSError is still a bug."""
    import errno

    import codesign.evaluation

    def full(*a, **k):
        raise OSError(getattr(errno, code), "No space left on device", "/runs/x/study.journal")

    monkeypatch.setattr(codesign.evaluation, "evaluate", full)
    got, out, err = cli("evaluate", SPECS / "examples" / "gb200-gpt-oss-120b.toml")
    assert got == rc, err
    if rc == 2:
        assert err.strip() == ("error: cannot write (/runs/x/study.journal): No space left on device; free space "
                               "or write elsewhere (--out) and rerun"), err
    else:
        assert err.startswith("internal error: OSError:") and "This is a bug" in err, err


def test_a_missing_shared_data_file_says_how_the_data_is_found(cli, monkeypatch, tmp_path):
    """The README's tour from a clone not beside shared/ failed with only '<path>: no such file'
    (fresh-user trial, session 41). A missing file under .../shared/data/ with CODESIGN_SHARED_DATA
    unset says to set it; with the variable set, or another path, the line is as before."""
    monkeypatch.delenv("CODESIGN_SHARED_DATA", raising=False)
    gone = tmp_path / "shared" / "data" / "measured" / "inferencemax_public.csv"
    rc, out, err = cli("validate", gone, "--out", tmp_path / "v")
    assert rc == 2 and err.strip() == (f"error: {gone}: no such file; the shared data is not beside this clone: set "
                                       "CODESIGN_SHARED_DATA to its directory (the README's quick start)"), err
    hf = tmp_path / "shared" / "data" / "hf_configs" / "x.json"
    rc, out, err = cli("model", "import", hf)
    assert rc == 2 and "set CODESIGN_SHARED_DATA" in err, err
    monkeypatch.setenv("CODESIGN_SHARED_DATA", str(tmp_path))
    rc, out, err = cli("validate", gone, "--out", tmp_path / "v")
    assert rc == 2 and err.strip() == f"error: {gone}: no such file", err


def test_an_unknown_metric_gets_a_guess():
    """A metric name's typo got the whole list only, where a spec key's gets 'did you mean'
    (fresh-user trial, session 41: 'ttft' for 'ttft_s')."""
    from codesign.search import metric_problem

    assert metric_problem("ttft", slo=True).startswith("unknown metric 'ttft'; did you mean 'ttft_s'? expected one of")
    assert "did you mean" not in metric_problem("zzzz", slo=True)


_FORMATS = ("bf16, fp8_e4m3, fp8_e5m2, int4_g32, mxfp4, mxfp6_e2m3, mxfp6_e3m2, mxfp8_e4m3, mxfp8_e5m2, mxint8, "
            "nvfp4")  # the number formats the shipped plugins register, sorted


@pytest.mark.parametrize("table, key, line", [
    # the formats registry's names are lower-case (formats.NumberFormat.name): a case slip of one
    ('[deployment]\nmoe_weights_format = "MXFP4"\n', "deployment.moe_weights_format",
     f"unknown number format 'MXFP4' (did you mean 'mxfp4'?); registered: {_FORMATS}"),
    ('[deployment]\nkv_cache_format = "FP8_E4M3"\n', "deployment.kv_cache_format",
     f"unknown number format 'FP8_E4M3' (did you mean 'fp8_e4m3'?); registered: {_FORMATS}"),
    # no registered name is near "fp5": the list alone
    ('[deployment]\nweights_format = "fp5"\n', "deployment.weights_format",
     f"unknown number format 'fp5'; registered: {_FORMATS}"),
    # the spec's enumerated strings (typing.Literal): a case slip, and the British spelling
    ('[deployment]\nmode = "Aggregated"\n', "deployment.mode",
     "expected one of 'aggregated', 'disaggregated' (got 'Aggregated'); did you mean 'aggregated'?"),
    (_SEARCH.replace('direction = "maximize"', 'direction = "maximise"'), "search.objectives.0.direction",
     "expected one of 'maximize', 'minimize' (got 'maximise'); did you mean 'maximize'?"),
    (_SEARCH.replace('direction = "maximize"', 'direction = "MAXIMIZE"'), "search.objectives.0.direction",
     "expected one of 'maximize', 'minimize' (got 'MAXIMIZE'); did you mean 'maximize'?"),
    # "max" is no slip of either: the list alone
    (_SEARCH.replace('direction = "maximize"', 'direction = "max"'), "search.objectives.0.direction",
     "expected one of 'maximize', 'minimize' (got 'max')"),
    # a key in the wrong case (difflib alone compares case: 'TDP' got the whole list)
    ('[chip]\nTDP = "1200 W"\n', "chip.TDP", "unknown key; did you mean 'tdp'?"),
])
def test_an_enumerated_name_in_the_wrong_case_or_spelling_gets_a_guess(cli, tmp_path, table, key, line):
    """``moe_weights_format = "MXFP4"`` and ``direction = "maximise"`` got the list of allowed names
    with no "did you mean" (fresh-user trial, session 43): difflib compares case, and the literal
    check had no guess at all. errors.close_name (every "did you mean" of a name) takes a name
    differing in case alone, else the closest without case."""
    spec = _example_with(tmp_path, table)
    err = _refused(cli("evaluate", spec))
    assert err.strip() == f"error: {spec}: {key}: {line}", err


def test_close_name_guesses_case_slips_and_spellings():
    """The one helper behind the guesses: case first, then difflib without case; None for nothing
    near, for a name that is no string, and for an empty list."""
    from codesign.errors import close_name

    assert close_name("MXFP4", ["bf16", "mxfp4", "nvfp4"]) == "mxfp4"
    assert close_name("minimise", ["maximize", "minimize"]) == "minimize"
    assert close_name("NSGA-2", ["tpe", "nsga2", "random"]) == "nsga2"
    assert close_name("zzz", ["maximize", "minimize"]) is None
    assert close_name(3, ["3"]) is None and close_name("x", []) is None


def test_a_sampler_and_a_baseline_name_get_a_guess(cli, tmp_path):
    """The other enumerated names of a spec: search.sampler (any case is read) and
    efficiency_from, a registered baseline's name ('GB200' for 'gb200')."""
    from codesign.search import sampler_problem

    assert sampler_problem("nsga-2").startswith("unknown sampler 'nsga-2'; did you mean 'nsga2'? expected one of ")
    spec = _example_with(tmp_path, 'efficiency_from = "GB200"\n')  # top level: the example has no table
    err = _refused(cli("evaluate", spec))
    assert f"error: {spec}: efficiency_from: 'GB200' is not a registered baseline (" in err, err
    assert err.strip().endswith("); did you mean 'gb200'?"), err


# ------------------------------------------- a unit typed in the wrong case gets the spelling to use
def _example_with(tmp_path, table):
    """specs/examples/gb200-gpt-oss-120b.toml copied to ``tmp_path`` (its includes made absolute),
    with ``table`` (TOML) after it: the copy's own value of a key, over the included one."""
    text = _EXAMPLE.read_text(encoding="utf-8").replace('"../', f'"{SPECS.as_posix()}/')
    spec = tmp_path / "gb200.toml"
    spec.write_text(text + "\n" + table, encoding="utf-8")
    return spec


_PINT = "is not defined in the unit registry"
_CASE = "unit names and prefixes are case-sensitive: did you mean"


@pytest.mark.parametrize("table, key, line", [
    # W is watt; lower-case w is no unit
    ('[chip]\ntdp = "1200 w"\n', "chip.tdp",
     f"cannot read '1200 w' as a power, e.g. '700 W' ('w' {_PINT}; {_CASE} '1200 W'?)"),
    # kilo is k (or K): "1 KW" is the same 1000 W, so it is not said again
    ('[chip]\ntdp = "1.2 kw"\n', "chip.tdp",
     f"cannot read '1.2 kw' as a power, e.g. '700 W' ('kw' {_PINT}; {_CASE} '1.2 kW'?)"),
    # tera-bits (Tb, 3/8 x 10^12 B/s) and tera-bytes (TB, 3 x 10^12 B/s) per second are both
    # bandwidths, eight times apart: both are said, the one with fewer letters changed first
    ('[memory.hbm]\nbandwidth = "3 tb/s"\n', "memory.hbm.bandwidth",
     f"cannot read '3 tb/s' as a bandwidth, e.g. '8 TB/s' ('tb' {_PINT}; {_CASE} '3 Tb/s' or '3 TB/s'?)"),
    ('[memory.hbm]\ncapacity = "192 gib"\n', "memory.hbm.capacity",
     f"cannot read '192 gib' as a size in bytes, e.g. '192 GiB' ('gib' {_PINT}; {_CASE} '192 Gib' or '192 GiB'?)"),
    # seconds are s: only the lower-case re-casing is a unit
    ('[network]\nscaleup_latency = "2 US"\n', "network.scaleup_latency",
     f"cannot read '2 US' as a time, e.g. '2 us' ('US' {_PINT}; {_CASE} '2 us'?)"),
    ('[memory.hbm]\nbandwidth = "8 TB/S"\n', "memory.hbm.bandwidth",
     f"cannot read '8 TB/S' as a bandwidth, e.g. '8 TB/s' ('S' {_PINT}; {_CASE} '8 TB/s'?)"),
])
def test_a_unit_in_the_wrong_case_gets_the_spelling_to_use(cli, tmp_path, table, key, line):
    """``tdp = "1200 w"`` or ``"3 tb/s"`` were refused with pint's "'w' is not defined" alone, where
    ``"5 pflops"`` says what to write: each re-casing of the name that reads as the key's dimension
    is said."""
    spec = _example_with(tmp_path, table)
    err = _refused(cli("evaluate", spec))
    assert err.strip() == f"error: {spec}: {key}: {line}", err


@pytest.mark.parametrize("table, key, line", [
    # W is watt, a power: no re-casing of 'w' is a bandwidth, so what it would be is said
    ('[memory.hbm]\nbandwidth = "1200 w"\n', "memory.hbm.bandwidth",
     "expected a bandwidth, e.g. '8 TB/s' (got '1200 w': 'w' is no unit; unit names are case-sensitive, "
     "and '1200 W' is a power)"),
    # Gb (one letter re-cased) is gigabits, GB (two) gigabytes: two kinds, fewest re-cased first
    ('[chip]\ntdp = "1200 gb"\n', "chip.tdp",
     "expected a power, e.g. '700 W' (got '1200 gb': 'gb' is no unit; unit names are case-sensitive, "
     "and '1200 Gb' is a size in bits, '1200 GB' a size in bytes)"),
    # Tb/s and TB/s are both bandwidths: the kind is said once, with the fewer letters re-cased
    ('[memory.hbm]\ncapacity = "8 tb/s"\n', "memory.hbm.capacity",
     "expected a size in bytes, e.g. '192 GiB' (got '8 tb/s': 'tb' is no unit; unit names are "
     "case-sensitive, and '8 Tb/s' is a bandwidth)"),
    # GHz is a clock (1/s), no spec key's kind
    ('[memory.hbm]\nbandwidth = "2 ghz"\n', "memory.hbm.bandwidth",
     "expected a bandwidth, e.g. '8 TB/s' (got '2 ghz': 'ghz' is no unit; unit names are case-sensitive, "
     "and '2 GHz' is a frequency)"),
])
def test_a_unit_in_the_wrong_case_of_another_kind_says_what_it_would_be(cli, tmp_path, table, key, line):
    """A bandwidth written "1200 w" was refused with pint's "'w' is not defined" alone (fresh-user
    trial, session 46), where "1200 W" says it is a power: a re-casing that reads as another kind
    of quantity is named with that kind."""
    spec = _example_with(tmp_path, table)
    err = _refused(cli("evaluate", spec))
    assert err.strip() == f"error: {spec}: {key}: {line}", err


@pytest.mark.parametrize("table, key, line", [
    # TB/s/W is a bandwidth per power, not a bandwidth
    ('[memory.hbm]\nbandwidth = "8 tb/s/w"\n', "memory.hbm.bandwidth",
     f"cannot read '8 tb/s/w' as a bandwidth, e.g. '8 TB/s' ('tb' {_PINT})"),
    # no re-casing of 'wats' is a unit at all
    ('[chip]\ntdp = "1200 wats"\n', "chip.tdp", f"cannot read '1200 wats' as a power, e.g. '700 W' ('wats' {_PINT})"),
])
def test_a_unit_no_re_casing_fixes_gets_no_guess(cli, tmp_path, table, key, line):
    spec = _example_with(tmp_path, table)
    err = _refused(cli("evaluate", spec))
    assert err.strip() == f"error: {spec}: {key}: {line}", err


def test_a_search_bound_in_the_wrong_case_gets_the_spelling_to_use(cli, tmp_path):
    """A [[search.constraints]] bound goes through the same reading: "1.2 kw" on peak_power_w
    (a power, in W) is refused with '1.2 kW'; evaluate checks the search table as optimize does."""
    spec = _example_with(tmp_path, _SEARCH.replace('max = "1200 W"', 'max = "1.2 kw"'))
    err = _refused(cli("evaluate", spec))
    assert f"error: {spec}: search.constraints.0.max:" in err and f"'kw' {_PINT}; {_CASE} '1.2 kW'?" in err, err


def test_a_bound_in_its_metrics_unit_in_the_wrong_case_gets_the_spelling_to_use():
    """parse_in_unit, a bound written in the metric's own unit: 'TOK' is no unit, 'tok' is."""
    from codesign.units import QuantityError, parse_in_unit

    with pytest.raises(QuantityError) as exc:
        parse_in_unit("100 TOK/s/kW", "tok/s/kW")
    assert str(exc.value) == ("cannot read '100 TOK/s/kW' as a number in tok/s/kW, the metric's unit ('TOK' "
                              f"{_PINT}; {_CASE} '100 tok/s/kW'?)")


# ------------------------------------- a prefix slip that pint reads as another prefix is refused
@pytest.mark.parametrize("table, key, line", [
    # P is peta, p pico: 0.3 PJ/FLOP is 3 x 10^14 J per FLOP, 10^27 times an accelerator's 0.3 pJ
    ('[chip.energy]\nper_flop_fp4 = "0.3 PJ/FLOP"\n', "chip.energy.per_flop_fp4",
     "'0.3 PJ/FLOP' reads as 3e+26 pJ/FLOP, above 1000 pJ/FLOP, the sanity ceiling of an energy per "
     "FLOP: a unit slip? Prefixes are case-sensitive (m milli, M mega; p pico, P peta), e.g. '0.3 pJ/FLOP'"),
    # M is mega: 2 Ms is 2 x 10^6 s (23 days) for a link hop of 2 ms
    ('[network]\nscaleup_latency = "2 Ms"\n', "network.scaleup_latency",
     "'2 Ms' reads as 2e+06 s, above 86400 s, the sanity ceiling of a time: a unit slip? Prefixes are "
     "case-sensitive (m milli, M mega; p pico, P peta), e.g. '2 us'"),
    # M is mega: 1.2 MW is 1.2 x 10^6 W, 50 times WSE-3's 23 kW, the most one chip draws; 1.2 kW was meant
    ('[chip]\ntdp = "1.2 MW"\n', "chip.tdp",
     "'1.2 MW' reads as 1.2e+06 W, above 50000 W, the sanity ceiling of a power: a unit slip? Prefixes are "
     "case-sensitive (m milli, M mega; p pico, P peta), did you mean '1.2 kW'?"),
    # m is milli: 1.2 mW is 1.2 x 10^-3 W, below the 1 W floor
    ('[chip]\ntdp = "1.2 mW"\n', "chip.tdp",
     "'1.2 mW' reads as 0.0012 W, below 1 W, the sanity floor of a power (no accelerator draws that little): "
     "a unit slip? did you mean '1.2 kW'?"),
    ('[chip.energy]\nstatic = "150 kW"\n', "chip.energy.static",
     "'150 kW' reads as 150000 W, above 50000 W, the sanity ceiling of a power: a unit slip? Prefixes are "
     "case-sensitive (m milli, M mega; p pico, P peta), did you mean '150 W'?"),
])
def test_a_prefix_slip_above_the_sanity_ceiling_is_refused(cli, tmp_path, table, key, line):
    """"0.3 PJ/FLOP" (peta for pico), "2 Ms" (mega for milli) and "1.2 MW" (mega for kilo) are units
    pint reads, so no case guess applies; they were accepted silently (evaluate priced the GB200
    example with exit 0; the power in session 44). Above 1 nJ/FLOP, 1 uJ/B, one day or 50 kW
    (units.SANITY_CEIL), or a power below 1 W (SANITY_FLOOR), a value is refused as a slip."""
    spec = _example_with(tmp_path, table)
    err = _refused(cli("evaluate", spec))
    assert err.strip() == f"error: {spec}: {key}: {line}", err


@pytest.mark.parametrize("table, key, line", [
    # 8 TB/ms = 8 x 10^12 B per 10^-3 s = 8 x 10^15 B/s = 8000 TB/s, above 10^15 B/s = 1000 TB/s
    ('[memory.hbm]\nbandwidth = "8 TB/ms"\n', "memory.hbm.bandwidth",
     "reads as 8000 TB/s, above 1000 TB/s, the sanity ceiling of one chip's HBM bandwidth (8 TB/s is the most "
     "in hardware_specs.csv): a unit slip (a time unit other than s, e.g. TB/ms)? e.g. '8 TB/s'"),
    # 900 TB/ms = 9 x 10^17 B/s = 900000 TB/s
    ('[network]\nscaleup_bandwidth = "900 TB/ms"\n', "network.scaleup_bandwidth",
     "reads as 900000 TB/s, above 1000 TB/s, the sanity ceiling of one chip's scale-up bandwidth (900 GB/s is "
     "the most in hardware_specs.csv): a unit slip (a time unit other than s, e.g. TB/ms)? e.g. '900 GB/s'"),
])
def test_an_hbm_or_scale_up_bandwidth_a_time_unit_slip_makes_is_refused(cli, tmp_path, table, key, line):
    """"8 TB/ms" for "8 TB/s" is 8 PB/s, below the units' own bandwidth ceiling (an on-wafer SRAM tier
    runs at 21 PB/s), and evaluate priced it with exit 0 (fresh-user trial, session 48). One chip's
    HBM or scale-up bandwidth above 1 PB/s (spec.HBM_BANDWIDTH_CEIL, SCALEUP_BANDWIDTH_CEIL; 125 and
    1,111 times the most in hardware_specs.csv) is refused; 8 TB/s of HBM (the example's) is not."""
    spec = _example_with(tmp_path, table)
    err = _refused(cli("evaluate", spec))
    assert err.strip() == f"error: {spec}: {key}: {line}", err


@pytest.mark.parametrize("table, said", [
    # 186 Gb = 186 x 10^9 bits / 8 = 23.25 x 10^9 bytes
    ('[memory.hbm]\ncapacity = "186 Gb"\n',
     'memory.hbm.capacity = "186 Gb" is read as 23.25 GB (Gb is gigabits; write GB for gigabytes)'),
    # 8 Tb/s = 8 x 10^12 bit/s / 8 = 10^12 B/s
    ('[memory.hbm]\nbandwidth = "8 Tb/s"\n',
     'memory.hbm.bandwidth = "8 Tb/s" is read as 1 TB/s (Tb is terabits; write TB for terabytes)'),
])
def test_a_size_or_bandwidth_in_bits_is_priced_with_a_note(cli, tmp_path, table, said):
    """Bits for bytes were priced silently ("186 Gb" as 23.25 GB, exit 0; fresh-user trial, session
    44). Bits are a valid unit, so the spec is priced as written, with one note on stderr naming the
    file, the key and the reading. GB200's own "800 Gb/s" scale-out (a link, quoted in bits) gets none."""
    spec = _example_with(tmp_path, table)
    rc, out, err = cli("evaluate", spec, "--json")
    assert rc == 0 and "Traceback" not in err, err
    assert [line for line in err.splitlines() if line.startswith("note:")] == [f"note: {spec}: {said}"], err
    rc, out, err = cli("evaluate", _EXAMPLE, "--json")
    assert rc == 0 and "note:" not in err, err


@pytest.mark.parametrize("table, key, value, human, fixes", [
    ("chip.area", "max", "800 mm2", "an area", "'800 mm**2' or '800 mm^2'"),
    ("chip.area", "per_sram_byte", "0.5 mm2/MiB", "an area per byte", "'0.5 mm**2/MiB' or '0.5 mm^2/MiB'"),
    ("chip.energy", "static_per_area", "0.14 W/cm2", "a power per area", "'0.14 W/cm**2' or '0.14 W/cm^2'"),
])
def test_a_power_glued_to_a_unit_is_refused_with_the_spelling_pint_reads(cli, tmp_path, table, key, value, human,
                                                                           fixes):
    """Fresh-user trial: an area written "800 mm2", as datasheets write it, was refused with pint's
    "'mm2' is not defined in the unit registry" alone. The line names the file, the key path, what was
    expected and the two spellings pint reads (the value with its power after ** or ^), as a
    mis-cased unit gets its re-casings; exit 2."""
    spec = tmp_path / "s.toml"
    spec.write_text(f'include = ["{(SPECS / "examples" / "gb200-gpt-oss-120b.toml").as_posix()}"]\n'
                    f'[{table}]\n{key} = "{value}"\n')
    _refused(cli("evaluate", spec),
             f"error: {spec}: {table}.{key}: cannot read '{value}' as {human}",
             f"is not defined in the unit registry; a power of a unit is written with ** or ^: did you mean {fixes}?)")


def test_a_search_bound_with_a_power_glued_to_its_unit_says_how_to_write_it(cli, tmp_path):
    """The same slip in a [[search.constraints]] bound (read in the metric's unit, mm^2)."""
    spec = tmp_path / "s.toml"
    spec.write_text(SEARCH_SPEC.read_text().replace('max = "1716 mm**2"', 'max = "800 mm2"')
                    .replace('"technology/', f'"{SPECS.as_posix()}/technology/')
                    .replace('"models/', f'"{SPECS.as_posix()}/models/')
                    .replace('"workloads/', f'"{SPECS.as_posix()}/workloads/')
                    .replace('"deployments/', f'"{SPECS.as_posix()}/deployments/')
                    .replace('"examples/', f'"{SPECS.as_posix()}/examples/'))
    _refused(cli("optimize", spec, "--trials", "1", "--out", tmp_path / "o"),
             f"error: {spec}: search.constraints.1.max: cannot read '800 mm2'",
             "('mm2' is not defined in the unit registry; a power of a unit is written with ** or ^: did you mean "
             "'800 mm**2' or '800 mm^2'?)")
    assert not (tmp_path / "o").exists()
