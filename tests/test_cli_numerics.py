"""CLI tests of ``codesign numerics`` (in-process through ``codesign.cli.main``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from codesign.cli import main

REPO = Path(__file__).resolve().parents[1]


def shared_data_dir() -> Path:
    """``$CODESIGN_SHARED_DATA`` or ``<repo>/../shared/data``."""
    env = os.environ.get("CODESIGN_SHARED_DATA")
    return Path(env) if env else (REPO / ".." / "shared" / "data").resolve()


@pytest.fixture(scope="module")
def golden():
    path = shared_data_dir() / "mx_golden_public.npz"
    if not path.exists():
        pytest.skip(f"golden vectors not found at {path}")
    return np.load(path)


@pytest.mark.parametrize("rounding", ["even", "nearest"])
def test_quantize_file_matches_golden(golden, tmp_path, rounding):
    x = golden["rand_x"]
    src, dst = tmp_path / "in.npy", tmp_path / "out.npy"
    np.save(src, x)
    assert main(["numerics", "quantize", "--format", "mxfp4", "--rounding", rounding,
                 str(src), str(dst)]) == 0
    y = np.load(dst)
    assert y.dtype == np.float32 and y.shape == x.shape
    np.testing.assert_array_equal(y, golden[f"rand_y_fp4_e2m1_{rounding}"])


def test_quantize_format_name_is_case_insensitive(tmp_path):
    src, dst = tmp_path / "in.npy", tmp_path / "out"
    np.save(src, np.full((1, 32), 5.0, np.float32))
    assert main(["numerics", "quantize", "--format", "MXFP4", str(src), str(dst)]) == 0
    np.testing.assert_array_equal(np.load(dst), np.full((1, 32), 4.0, np.float32))  # 5 -> 4 (RNE)


def test_unknown_format_lists_known(tmp_path, capsys):
    src = tmp_path / "in.npy"
    np.save(src, np.ones((1, 32), np.float32))
    assert main(["numerics", "quantize", "--format", "mxfp3", str(src), str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: unknown number format 'mxfp3'")
    assert "mxfp4" in err and "nvfp4" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("case,arr,msg", [
    ("missing", None, "no such file"),
    ("dtype", np.ones((1, 32), np.float64), "dtype must be float32, got float64"),
    ("shape", np.ones((2, 40), np.float32), "not a multiple of mxfp4's block size 32"),
    ("scalar", np.float32(1.0), "at least one axis"),
    ("garbage", b"not numpy", "not a readable .npy file"),
])
def test_bad_input_is_usage_error(tmp_path, capsys, case, arr, msg):
    src = tmp_path / "in.npy"
    if isinstance(arr, bytes):
        src.write_bytes(arr)
    elif arr is not None:
        np.save(src, arr)
    code = main(["numerics", "quantize", "--format", "mxfp4", str(src), str(tmp_path / "o.npy")])
    err = capsys.readouterr().err
    assert code == 2 and msg in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_error_synthetic_json(capsys):
    assert main(["numerics", "error", "--format", "mxfp4", "--synthetic", "normal",
                 "--blocks", "64", "--seed", "1", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema_version"] == 1 and doc["format"] == "mxfp4"
    for key in ("mse", "sqnr_db", "max_abs_error", "scale_histogram"):
        assert key in doc
    assert sum(doc["scale_histogram"].values()) == 64
    assert all(int(k) in range(-127, 128) for k in doc["scale_histogram"])
    # MXFP4 on unit normal data: ~18.7 dB (reference figure); 64 blocks -> loose bound
    assert 16.5 < doc["sqnr_db"] < 21


def test_error_file_json_hand_worked(tmp_path, capsys):
    x = np.zeros((2, 32), np.float32)
    x[0, 0] = 5.0  # -> 4 (error 1), scale 2^0
    x[1, 0] = 1.0  # exact, scale 2^-2
    src = tmp_path / "x.npy"
    np.save(src, x)
    assert main(["numerics", "error", "--format", "mxfp4", str(src), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["mse"] == pytest.approx(1 / 64) and doc["max_abs_error"] == 1.0
    assert doc["sqnr_db"] == pytest.approx(10 * np.log10(26))
    assert doc["scale_histogram"] == {"-2": 1, "0": 1}


def test_error_table_and_non_mx_format(capsys):
    assert main(["numerics", "error", "--format", "nvfp4", "--synthetic", "laplace",
                 "--blocks", "16"]) == 0
    out = capsys.readouterr().out
    assert "SQNR" in out and "MSE" in out
    assert main(["numerics", "error", "--format", "mxfp8_e4m3", "--synthetic", "student-t",
                 "--blocks", "8"]) == 0
    out = capsys.readouterr().out
    assert "E8M0 scale histogram" in out


def test_error_needs_a_source(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["numerics", "error", "--format", "mxfp4"])
    assert exc.value.code == 2


def test_error_missing_file(tmp_path, capsys):
    assert main(["numerics", "error", "--format", "mxfp4", str(tmp_path / "nope.npy")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_formats_json_and_table(capsys):
    assert main(["numerics", "formats", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    rows = {r["name"]: r for r in doc["formats"]}
    assert doc["schema_version"] == 1
    assert rows["mxfp4"]["bits_per_element"] == 4.25 and rows["mxfp4"]["block_size"] == 32
    assert rows["nvfp4"]["bits_per_element"] == 4.5 and rows["nvfp4"]["block_size"] == 16
    assert rows["mxint8"]["compute_class"] == "int8"
    assert main(["numerics", "formats"]) == 0
    out = capsys.readouterr().out
    assert "mxfp6_e2m3" in out and "bf16" in out
