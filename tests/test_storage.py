"""Storage and scale: resume after SIGKILL, local workers on one journal, PostgreSQL workers,
passwords never printed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest
from conftest import SPECS

FLAGSHIP = SPECS / "jalapeno-gpt-oss-120b.toml"
CODESIGN = [sys.executable, "-c", "import sys; from codesign.cli import entry; sys.argv[0] = 'codesign'; entry()"]


def _trials(storage_path_or_url, name="jalapeno-gpt-oss-120b", missing_ok=False):
    """The study's trials; with ``missing_ok``, none while the study has no record yet."""
    import optuna

    from codesign.search import open_storage

    store, _ = open_storage(storage_path_or_url, None)
    if missing_ok and name not in {s.study_name for s in store.get_all_studies()}:
        return []
    st = optuna.load_study(study_name=name, storage=store)
    return st.get_trials(deepcopy=False)


def _completed_so_far(journal):
    """COMPLETE trials in a run's journal while the run is going: 0 before the journal exists or before
    the run has written its study's record (the file is created first; a poll between the two
    found no study and failed with Optuna's KeyError in CI, session 17)."""
    if not journal.exists():
        return 0
    return sum(1 for t in _trials(str(journal), missing_ok=True) if t.state.name == "COMPLETE")


def test_redacts_password_of_unreachable_server(tmp_path):
    url = "postgresql://alice:s3cr3t-pw@127.0.0.1:1/nodb"
    p = subprocess.run(CODESIGN + ["optimize", str(FLAGSHIP), "--trials", "5", "--out", str(tmp_path),
                                   "--storage", url], capture_output=True, text=True, timeout=120)
    assert p.returncode != 0
    assert "s3cr3t-pw" not in p.stdout + p.stderr
    assert "alice:***@127.0.0.1" in p.stderr and "Traceback" not in p.stderr
    from codesign.search import redact

    assert redact("postgresql://u:p@h/db?password=x&sslmode=require") == "postgresql://u:***@h/db?password=***&sslmode=require"
    # typed without its scheme the URL still carries a password (it was printed); a path has none
    assert redact("u:secretpw@127.0.0.1/db") == "u:***@127.0.0.1/db"
    assert redact("runs/x/study.journal") == "runs/x/study.journal"


def test_an_in_memory_database_is_refused(cli, tmp_path):
    """sqlite:///:memory: (or sqlite://) keeps nothing: a worker's trials vanished when it exited."""
    for url in ("sqlite:///:memory:", "sqlite://"):
        rc, out, err = cli("worker", FLAGSHIP, "--storage", url, "--trials", "5")
        assert rc == 2 and "an in-memory database keeps nothing" in err, err


def test_a_bad_port_is_named_with_the_url(cli, tmp_path):
    """A TCP port is an integer 1..65535; another one is refused before a connection is tried, naming
    the URL (password redacted), not as Python's "invalid literal for int()"; nothing is written."""
    out_dir = tmp_path / "out"
    for url in ("postgresql://u:s3cr3t@host:notaport/db", "postgresql://u:s3cr3t@host:65536/db",
                "postgresql://u:s3cr3t@host:0/db", "postgresql://u:s3cr3t@host:/db",
                "postgresql://u:s3cr3t@[::1]:x/db"):
        shown = url.replace("s3cr3t", "***")
        for argv in (("worker", FLAGSHIP, "--storage", url, "--trials", "5"),
                     ("optimize", FLAGSHIP, "--storage", url, "--trials", "5", "--out", out_dir)):
            rc, out, err = cli(*argv)
            assert rc == 2, (argv, err)
            assert f"--storage {shown}: the port must be an integer 1..65535" in err, err
            assert "s3cr3t" not in out + err and "invalid literal" not in err
    assert not out_dir.exists()


def test_a_trial_another_worker_told_first_is_dropped_not_a_crash(tmp_path):
    """SQLite has no row locks, so Optuna's RDB storage can hand one enqueued trial to two workers
    (`optimize --workers 2 --storage sqlite:///...` crashed on UpdateFinishedTrialError). The copy
    told second is dropped, not counted (the worker runs another in its place), and the first tell
    stands."""
    import optuna

    from codesign.evaluation import evaluate as priced
    from codesign.search import run_search
    from codesign.spec import load_spec

    url = f"sqlite:///{tmp_path / 'x.db'}"
    stolen = {}

    def evaluate(spec, *args, **kwargs):
        # a second worker tells the trials this one is running, once, before this one can
        store = optuna.storages.RDBStorage(url)
        for study in store.get_all_studies() if not stolen else ():
            for t in store.get_all_trials(study._study_id, states=(optuna.trial.TrialState.RUNNING,)):
                store.set_trial_user_attr(t._trial_id, "feasible", False)
                store.set_trial_state_values(t._trial_id, optuna.trial.TrialState.COMPLETE, [0.0, 1e9])
                stolen[t.number] = True
        return priced(spec, *args, **kwargs)

    res = run_search(load_spec(FLAGSHIP), trials=12, seed=0, out_dir=tmp_path / "out", storage=url,
                     evaluate=evaluate)
    assert stolen, "the test's second worker never found a running trial"
    trials = res.study.get_trials(deepcopy=False)
    # this process told its 12 trials; the ones the other worker told are that worker's
    assert [t.state for t in trials] == [optuna.trial.TrialState.COMPLETE] * (12 + len(stolen))
    assert all(trials[n].values == [0.0, 1e9] for n in stolen)  # the first tell stands


@pytest.mark.parametrize("raised, code, line", [
    (ZeroDivisionError("division by zero"), 3, "internal error: worker 2: ZeroDivisionError: division by zero (at "),
    ("codesign-error", 2, "error: worker 2: spec.toml: search.trials: must be >= 1"),
    (KeyboardInterrupt(), 130, None),
])
def test_a_worker_process_exits_as_the_cli_does(monkeypatch, capsys, raised, code, line):
    """A --workers process that fails exits 2 (bad input), 3 (a bug) or 130 (Ctrl-C) with one line
    naming the worker, not multiprocessing's traceback and exit 1 (the parent then reports a bug
    as an internal error: a crashed worker is no input error)."""
    import codesign.search as search
    from codesign.errors import CodesignError

    exc = CodesignError("spec.toml: search.trials: must be >= 1") if raised == "codesign-error" else raised

    def fails(*args):
        raise exc

    monkeypatch.setattr(search, "worker_main", fails)
    with pytest.raises(SystemExit) as stop:
        search._worker_process("spec.toml", None, "out", 5, 0, 2)
    assert stop.value.code == code
    err = capsys.readouterr().err
    assert (err == "") if line is None else (err.startswith(line) and err.count("\n") == 1), err


@pytest.mark.parametrize("storage, says", [
    # a URL whose path ends in .journal is a URL (it made ./postgresql:/u:hunter2@host/ and printed it)
    ("postgresql://u:hunter2@host/study.journal", "storage postgresql://u:***@host/study.journal"),
    ("//u:hunter2@host/db", "--storage //u:***@host/db: expected a journal file"),
    ("sqlite:///", "an in-memory database keeps nothing"),
    ("journal:", "the journal path is empty or starts or ends with a space"),
    ("journal:   ", "the journal path is empty or starts or ends with a space"),
    (" {tmp}/x.journal", "the journal path is empty or starts or ends with a space"),
    ("journal:{tmp}", "is a directory; give a journal file in it"),
])
def test_storage_values_that_are_no_journal_file_or_hide_a_password(cli, tmp_path, monkeypatch, storage, says):
    """Each is refused with one error line (exit 2), no password shown, nothing written in the
    working directory."""
    monkeypatch.chdir(tmp_path)
    storage = storage.format(tmp=tmp_path)
    for argv in (("optimize", FLAGSHIP, "--storage", storage, "--trials", "5", "--out", tmp_path / "out"),
                 ("worker", FLAGSHIP, "--storage", storage, "--trials", "5")):
        rc, out, err = cli(*argv)
        assert rc == 2, (argv, err)
        assert says in err and err.count("error:") == 1 and "hunter2" not in out + err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_scrub_masks_password_pieces_not_letters_of_words():
    """A driver's message keeps its words: only the password, or a piece of it the driver split
    off, standing on its own is masked (a password "e" made "Op***rationalError")."""
    from codesign.search import scrub

    msg = "(psycopg2.OperationalError) connection to server failed: Connection refused"
    assert scrub(msg, "postgresql://u:e@127.0.0.1:1/db") == msg
    assert scrub('could not translate host name "ss@127.0.0.1" to address',
                 "postgresql://u:p@ss@127.0.0.1/db") == 'could not translate host name "***@127.0.0.1" to address'
    assert scrub("password authentication failed (hunter2)", "postgresql://u:hunter2@h/db") == \
        "password authentication failed (***)"


def test_a_worker_process_hands_its_message_to_the_parent(monkeypatch, capsys):
    """Under --workers the parent reports a failed worker once, with its message (so --json names
    the broken plugin): the worker puts its line on the queue instead of printing it."""
    import codesign.search as search
    from codesign.errors import PluginBugError

    def fails(*args):
        raise PluginBugError("cost model 'bad' (plugin bad 1.0) raised ZeroDivisionError: boom")

    monkeypatch.setattr(search, "worker_main", fails)
    got = []
    with pytest.raises(SystemExit) as stop:
        search._worker_process("spec.toml", None, "out", 5, 0, 1, errors=type("Q", (), {"put": lambda self, x: got.append(x)})())
    assert stop.value.code == 3 and capsys.readouterr().err == ""
    assert got == ["worker 1: cost model 'bad' (plugin bad 1.0) raised ZeroDivisionError: boom"]


def test_postgres_scheme_alias_is_postgresql(monkeypatch):
    """postgres:// (libpq's alias) names the same server as postgresql://; SQLAlchemy refuses the
    alias ("Can't load plugin: sqlalchemy.dialects:postgres"), so it is rewritten before the driver,
    whichever driver is installed (here: psycopg 3 alone, SQLAlchemy's default for postgresql://)."""
    import importlib.util

    from codesign.search import _driver_url

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "psycopg2" else (object() if name == "psycopg" else real(name, *a)))
    assert _driver_url("postgres://u:pw@h/db") == "postgresql://u:pw@h/db"
    assert _driver_url("postgresql://u:pw@h/db") == "postgresql://u:pw@h/db"
    assert _driver_url("sqlite:///x.db") == "sqlite:///x.db"


def test_an_unknown_database_scheme_says_which_storages_there_are(cli):
    """foo://bar reached SQLAlchemy, whose "Can't load plugin: sqlalchemy.dialects:foo" was printed
    as it was (fresh-user trial, session 25)."""
    rc, _, err = cli("worker", FLAGSHIP, "--storage", "foo://u:s3cr3t@h/db", "--trials", "5")
    assert rc == 2, err
    assert ("cannot open storage foo://u:***@h/db: no database of the scheme foo:// is known; codesign supports "
            "and tests a journal file") in err, err
    assert "sqlalchemy" not in err and "s3cr3t" not in err


def test_a_password_read_as_the_port_is_not_echoed(cli):
    """user:password/db without "@host" parses with the password as the port: the refusal hides it
    and says where a password goes."""
    rc, out, err = cli("worker", FLAGSHIP, "--storage", "postgresql://u:s3cr3t/db", "--trials", "5")
    assert rc == 2, err
    assert "--storage postgresql://u:***/db: the port must be an integer 1..65535" in err, err
    assert "user:password@host" in err and "s3cr3t" not in out + err


def test_an_empty_storage_says_it_is_empty(cli, tmp_path, monkeypatch):
    """--storage '' (an unset variable in a script: --storage "$URL") was read as the current
    directory and refused as "is a directory"; it is refused as empty, saying what to give (exit 2,
    one line, nothing written), by optimize and worker alike."""
    monkeypatch.chdir(tmp_path)
    for argv in (("optimize", FLAGSHIP, "--storage", "", "--trials", "1", "--out", tmp_path / "o"),
                 ("worker", FLAGSHIP, "--storage", "", "--trials", "1")):
        rc, out, err = cli(*argv)
        assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1, (argv, err)
        assert err.startswith("error: --storage '': empty; give a journal file path, sqlite:///PATH or postgresql://"), err
        assert "is a directory" not in err
    assert list(tmp_path.iterdir()) == []


def test_a_storage_that_is_no_journal_path_nor_url_says_what_it_takes(cli, tmp_path):
    """A path not ending in .journal (study.log, study.db, none), a directory or a URL without its
    scheme was answered "Could not parse SQLAlchemy URL from given URL string": the refusal names
    what was given (password redacted) and the three forms --storage takes; nothing is created."""
    out_dir = tmp_path / "out"
    takes = ("expected a journal file (a path ending in .journal, or journal:PATH for any file name) or a "
             "database URL (postgresql://user:password@host/db, sqlite:///relative/path.db, "
             "sqlite:////absolute/path.db)")
    for given, shown in ((tmp_path / "x" / "study.log", None), (tmp_path / "x" / "study", None),
                         (tmp_path / "study.db", None), (tmp_path, None),
                         ("u:s3cr3t@127.0.0.1/db", "u:***@127.0.0.1/db")):
        shown = shown or str(given)
        for argv in (("worker", FLAGSHIP, "--storage", given, "--trials", "5"),
                     ("optimize", FLAGSHIP, "--storage", given, "--trials", "5", "--out", out_dir)):
            rc, out, err = cli(*argv)
            assert rc == 2 and "Traceback" not in err, (argv, err)
            [line] = err.strip().splitlines()
            what = "is a directory; " if given == tmp_path else ""
            assert line == f"error: --storage {shown}: {what}{takes}", line
            assert "s3cr3t" not in out + err and "SQLAlchemy" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no x/, no study.db, no out/


def test_an_unclosed_ipv6_bracket_is_named_not_int_parsed(cli):
    """postgresql://u:pw@[::1:5432/db (no "]") reached the driver, which answered "invalid literal for
    int() with base 10: ':1:5432'"; it is refused naming the URL (password redacted) and the form of
    an IPv6 host. Typed without "@host" the password is hidden as the port is."""
    ipv6 = "an IPv6 address goes in brackets with its port after them (postgresql://user:password@[::1]:5432/db)"
    for url, shown, hint in (("postgresql://u:s3cr3t@[::1:5432/db", "postgresql://u:***@[::1:5432/db", ipv6),
                             ("postgresql://u:s3cr3t@::1]:5432/db", "postgresql://u:***@::1]:5432/db", ipv6),
                             ("postgresql://u:s3[cr3t/db", "postgresql://u:***/db", "a password goes in user:password@host")):
        rc, out, err = cli("worker", FLAGSHIP, "--storage", url, "--trials", "5")
        assert rc == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
        assert err.startswith(f"error: --storage {shown}: malformed host") and hint in err, err
        assert "invalid literal" not in err and "cr3t" not in out + err, err


def test_storage_help_and_readme_give_an_absolute_sqlite_url():
    """SQLAlchemy reads sqlite:///x.db as x.db under the current directory and sqlite:////abs/x.db
    as /abs/x.db: optimize's and worker's --storage help say what --storage takes in the same words,
    with both forms, and the README gives the absolute one."""
    from conftest import REPO

    from codesign.cli import build_parser

    subs = build_parser()._subparsers._group_actions[0].choices
    helps = {cmd: " ".join(next(a.help for a in subs[cmd]._actions if a.dest == "storage").split())
             for cmd in ("optimize", "worker")}
    described = "a journal file (a path ending in .journal, or journal:PATH) or a database URL: " \
                "postgresql://user:password@host/db, sqlite:///relative/path.db or sqlite:////absolute/path.db"
    for cmd, text in helps.items():
        assert described in text, (cmd, text)
    assert "--storage sqlite:////abs/path/study.db" in " ".join((REPO / "README.md").read_text().split())


@pytest.mark.slow
def test_sigkill_mid_run_then_resume_loses_nothing(tmp_path):
    out = tmp_path / "run"
    cmd = CODESIGN + ["optimize", str(FLAGSHIP), "--trials", "200", "--out", str(out), "--json"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    journal = out / "study.journal"
    deadline = time.time() + 120
    told = 0
    while time.time() < deadline:  # wait until some trials are complete, then kill -9 mid-run
        time.sleep(0.3)
        told = _completed_so_far(journal)
        if told >= 40:
            break
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert told >= 40, "the run did not get going"
    before = {t.number: (t.params, t.values) for t in _trials(str(journal)) if t.state.name == "COMPLETE"}
    assert 40 <= len(before) < 200
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)  # the same command resumes
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["trials"] == 200
    after = {t.number: (t.params, t.values) for t in _trials(str(journal)) if t.state.name == "COMPLETE"}
    assert all(after[k] == v for k, v in before.items())  # no completed trial lost or changed
    assert len(after) == 200


@pytest.mark.slow
def test_sigterm_mid_run_exits_143_keeps_the_trials_and_resumes(tmp_path):
    """SIGTERM (``kill``, ``timeout``, a batch scheduler) is handled as Ctrl-C is: the same
    "interrupted" line, exit 143 (128 + 15, the shell's convention) instead of dying silently, and
    the completed trials stay in the journal, so the same command resumes from them."""
    journal = tmp_path / "term.journal"
    cmd = CODESIGN + ["optimize", str(FLAGSHIP), "--trials", "150", "--out", str(tmp_path / "run"),
                      "--storage", str(journal), "--json"]
    with open(tmp_path / "stderr.txt", "w") as err:  # a file: a pipe nobody reads could fill and block
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
    deadline = time.time() + 180
    told = 0
    while time.time() < deadline and proc.poll() is None:  # wait for completed trials, then SIGTERM
        time.sleep(0.3)
        told = _completed_so_far(journal)
        if told >= 1:
            break
    proc.send_signal(signal.SIGTERM)
    rc = proc.wait(timeout=120)
    assert told >= 1, "the run did not get going"
    stderr = (tmp_path / "stderr.txt").read_text()
    assert rc == 143, (rc, stderr)
    assert "Traceback" not in stderr
    before = {t.number: (t.params, t.values) for t in _trials(str(journal)) if t.state.name == "COMPLETE"}
    assert 1 <= len(before) < 150
    # the line says how many trials the journal keeps (it said "completed trials, if any" before session 43)
    n = len(before)
    assert (f"interrupted: {n} completed trial{'' if n == 1 else 's'} {'is' if n == 1 else 'are'} kept in the study "
            f"storage ({journal}); rerun the same command to resume") in stderr, stderr
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)  # the same command resumes
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["trials"] == 150
    after = {t.number: (t.params, t.values) for t in _trials(str(journal)) if t.state.name == "COMPLETE"}
    assert all(after[k] == v for k, v in before.items())  # no completed trial lost or changed
    assert len(after) == 150


@pytest.mark.slow
def test_local_workers_share_one_journal(cli, tmp_path):
    out = tmp_path / "w"
    rc, stdout, err = cli("optimize", FLAGSHIP, "--trials", "120", "--workers", "2", "--out", out, "--json")
    assert rc == 0, err
    doc = json.loads(stdout)
    assert doc["trials"] == 120
    ts = _trials(str(out / "study.journal"))
    done = [t for t in ts if t.state.name == "COMPLETE"]
    assert len(done) == 120 and len({t.number for t in done}) == 120
    assert not [t for t in ts if t.state.name == "RUNNING"]
    # the workers refine the shared front between batches, as one process does (without it the
    # front of a --workers run was its seed designs only)
    assert any(t.user_attrs.get("seed_source") in ("gradient", "refill") for t in done)


def test_a_worker_runs_the_designs_still_waiting_in_a_full_study(cli, tmp_path):
    """Workers that refine the shared front at the same moment each see the same room and can
    enqueue more designs than the study has room for (3 PostgreSQL workers left one WAITING trial
    behind). A worker that finds the study full runs what still waits instead of leaving it."""
    import optuna

    from codesign.search import open_storage

    journal = tmp_path / "full.journal"
    rc, out, err = cli("worker", FLAGSHIP, "--storage", journal, "--trials", "10")
    assert rc == 0, err
    store, _ = open_storage(str(journal), None)
    st = optuna.load_study(study_name="jalapeno-gpt-oss-120b", storage=store)
    done = [t for t in st.get_trials(deepcopy=False) if t.state.name == "COMPLETE"]
    assert len(done) == 10
    for t in done[:2]:  # two designs enqueued by "another worker" after the study filled up
        st.enqueue_trial(dict(t.params), skip_if_exists=False)
    rc, out, err = cli("worker", FLAGSHIP, "--storage", journal, "--trials", "10")
    assert rc == 0, err
    states = [t.state.name for t in _trials(str(journal))]
    assert states.count("WAITING") == 0 and states.count("COMPLETE") == 12, states


def test_worker_says_when_it_starts_the_study(cli, tmp_path):
    # a worker pointed at a storage with no trial of the spec's study starts it, and says so (a typo in
    # --storage would otherwise start a separate search silently); joining a running one says how
    # many completed trials it resumes from, on stderr (stdout stays the summary)
    journal = tmp_path / "typo.journal"
    rc, out, err = cli("worker", FLAGSHIP, "--storage", journal, "--trials", "10")
    assert rc == 0 and "worker: note: no trial of study 'jalapeno-gpt-oss-120b'" in err and "check --storage" in err
    assert "resuming" not in err
    rc, out, err = cli("worker", FLAGSHIP, "--storage", journal, "--trials", "20", "--json")
    assert rc == 0 and "no trial of study" not in err and json.loads(out)["trials"] == 20
    assert f"resuming: 10 completed trials in {journal}" in err and "resuming" not in out, err


def test_worker_json_names_the_cost_model_that_priced_its_trials(cli, tmp_path):
    """`codesign worker --json` said how many trials it told but not what priced them, where
    pareto.json, sweep_front.json and evaluate --json give the record {name, version, plugin}
    (session 40). It gives it: the registered model's version, its distribution's label, and the
    same record as the report `codesign optimize` writes of that study."""
    from importlib.metadata import version

    from codesign.pluginmanager import get_plugin_manager

    journal = tmp_path / "w.journal"
    rc, out, err = cli("worker", FLAGSHIP, "--storage", journal, "--trials", "2", "--json")
    assert rc == 0, err
    record = json.loads(out)["cost_model"]
    assert record == {"name": "analytical", "version": get_plugin_manager().cost_models["analytical"].version,
                      "plugin": f"analytical (codesign {version('codesign')})"}
    rc, out, err = cli("optimize", FLAGSHIP, "--storage", journal, "--trials", "2", "--out", tmp_path / "rep", "--json")
    assert rc in (0, 1) and json.loads(out)["new_trials"] == 0, err
    assert json.loads((tmp_path / "rep" / "pareto.json").read_text())["cost_model"] == record


def test_a_resumed_optimize_says_so_on_stderr(cli, tmp_path):
    """A rerun that continues a stored study says so before the search starts (one line on stderr:
    stdout stays one JSON document with --json); a new study says nothing of the kind."""
    out_dir = tmp_path / "run"
    rc, out, err = cli("optimize", FLAGSHIP, "--trials", "2", "--out", out_dir, "--json")
    assert rc in (0, 1) and json.loads(out)["trials"] == 2, err
    assert "resuming" not in err, err
    rc, out, err = cli("optimize", FLAGSHIP, "--trials", "3", "--out", out_dir, "--json")
    assert rc in (0, 1) and json.loads(out)["trials"] == 3, err
    lines = [line for line in err.splitlines() if "resuming" in line]
    assert lines == [f"resuming: 2 completed trials in {out_dir / 'study.journal'}"], err


def test_worker_refuses_a_journal_in_a_missing_directory(cli, tmp_path):
    # a worker joins the study kept at --storage: a directory that does not exist holds none (a
    # mistyped path), so it is refused and not created, as numerics quantize refuses an output in
    # a missing directory; a path under a file is refused too
    missing = tmp_path / "no" / "such"
    for storage in (missing / "x.journal", f"journal:{missing / 'x'}"):
        rc, out, err = cli("worker", FLAGSHIP, "--storage", storage, "--trials", "5")
        assert rc == 2 and out == "", err
        assert f"--storage {storage}: directory {missing} does not exist" in err and "Traceback" not in err
    assert not (tmp_path / "no").exists()
    (tmp_path / "f").write_text("")
    rc, out, err = cli("worker", FLAGSHIP, "--storage", tmp_path / "f" / "x.journal", "--trials", "5")
    assert rc == 2 and f"{tmp_path / 'f'} exists and is not a directory" in err, err


def _kv_refused_spec(tmp_path):
    """A spec refused after its storage is opened: a weight-only format among the searched KV cache
    choices is found only once the study is open (test_search's weight-only KV cache test)."""
    f = tmp_path / "kv.toml"
    f.write_text(f'include = ["{FLAGSHIP.as_posix()}"]\n[search.params]\n'
                 '"deployment.kv_cache_format" = { choices = ["fp8_e4m3", "int4_g32"] }\n')
    return f


def test_optimize_creates_the_missing_directory_of_a_sqlite_database(cli, tmp_path, monkeypatch):
    """SQLite creates a database file but not its directory: `optimize --storage sqlite:///dir/study.db`
    with dir missing failed with SQLAlchemy's "unable to open database file", while the directory of
    a journal is created. SQLAlchemy reads sqlite:///rel/x.db relative to the current directory and
    sqlite:////abs/x.db as /abs/x.db (STORAGE_HELP): optimize creates the directory of both, and
    the study's trial is stored in the database there."""
    monkeypatch.chdir(tmp_path)
    absolute = "sqlite:///" + str(tmp_path / "abs" / "sub" / "study.db")
    assert absolute.startswith("sqlite:////")
    for url, db in (("sqlite:///rel/sub/study.db", tmp_path / "rel" / "sub" / "study.db"),
                    (absolute, tmp_path / "abs" / "sub" / "study.db")):
        rc, _, err = cli("optimize", FLAGSHIP, "--storage", url, "--trials", "1", "--out", tmp_path / f"o-{db.parts[-3]}")
        assert rc in (0, 1) and "unable to open database file" not in err, (url, err)
        assert db.is_file(), url
        assert sum(t.state.name == "COMPLETE" for t in _trials(url)) == 1


def test_a_refused_optimize_leaves_no_sqlite_database_or_directory(cli, tmp_path, monkeypatch):
    """A spec refused once the storage is open leaves nothing it made behind, as with a journal
    (run_search's clean-up): not the directories it created for the database (relative and
    absolute URL), nor a new database file in a directory that existed (the corrected spec would
    clash with the study recorded there); a directory that existed stays."""
    monkeypatch.chdir(tmp_path)
    spec = _kv_refused_spec(tmp_path)
    (tmp_path / "kept").mkdir()
    for url in ("sqlite:///rel/sub/study.db", "sqlite:///" + str(tmp_path / "abs" / "sub" / "study.db"),
                "sqlite:///kept/study.db"):
        rc, _, err = cli("optimize", spec, "--storage", url, "--trials", "1", "--out", tmp_path / "o")
        assert rc == 2 and len(err.strip().splitlines()) == 1, (url, err)
        assert "'int4_g32' is a weight-only number format" in err, (url, err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept", "kv.toml"]
    assert list((tmp_path / "kept").iterdir()) == []


def test_worker_refuses_a_sqlite_database_in_a_missing_directory(cli, tmp_path, monkeypatch):
    """A worker joins the study kept in --storage, so a sqlite URL whose directory does not exist
    (relative or absolute) is refused naming it, as a journal's is, and nothing is created; SQLite's
    "unable to open database file" named no directory. A path under a file is refused too."""
    monkeypatch.chdir(tmp_path)
    for url, missing in (("sqlite:///no/such/study.db", "no/such"),
                         ("sqlite:///" + str(tmp_path / "gone" / "x" / "study.db"), str(tmp_path / "gone" / "x"))):
        rc, out, err = cli("worker", FLAGSHIP, "--storage", url, "--trials", "5")
        assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1, err
        assert f"error: --storage {url}: directory {missing} does not exist (a worker joins" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    (tmp_path / "f").write_text("")
    rc, out, err = cli("worker", FLAGSHIP, "--storage", "sqlite:///f/study.db", "--trials", "5")
    assert rc == 2 and "error: --storage sqlite:///f/study.db: f exists and is not a directory" in err, err


def test_a_worker_storage_under_a_file_names_the_file(cli, tmp_path, monkeypatch):
    """A worker's journal or SQLite database whose directory lies under a regular file (f/a with f a
    file) cannot exist: the worker said the directory "does not exist", as if a mkdir would do;
    it names the file in the way, as optimize does (exit 2, one line, nothing written)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "f").write_text("")
    for storage, parent in (("sqlite:///f/a/x.db", "f/a"), ("f/a/b/x.journal", "f/a/b"), ("journal:f/a/x", "f/a")):
        rc, out, err = cli("worker", FLAGSHIP, "--storage", storage, "--trials", "1")
        assert rc == 2 and out == "", (storage, err)
        assert err.strip() == f"error: --storage {storage}: {parent} is under f, which is a file, not a directory", err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f"]


def test_optimize_refuses_a_storage_under_a_file_as_bad_input(cli, tmp_path, monkeypatch):
    """A journal or SQLite database whose directory (or an ancestor of it) is a file cannot be
    made: optimize reported an internal error (exit 3: NotADirectoryError from the journal repair,
    or from the clean-up that unlinks a fresh journal). It is bad input: one line naming the
    directory and the file in the way, exit 2, nothing written."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "f").write_text("")
    for storage, parent in (("f/study.journal", "f"), ("f/a/b/study.journal", "f/a/b"), ("journal:f/x", "f"),
                            ("sqlite:///f/study.db", "f"), ("sqlite:///f/a/study.db", "f/a")):
        rc, out, err = cli("optimize", FLAGSHIP, "--storage", storage, "--trials", "1", "--out", tmp_path / "o")
        assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1, (storage, err)
        assert err.startswith(f"error: --storage {storage}: cannot create the directory {parent}: "), (storage, err)
        assert err.strip().endswith(": f exists and is not a directory"), (storage, err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f"]


def test_a_storage_directory_that_cannot_be_made_is_named_by_its_option(cli, tmp_path, monkeypatch):
    """The storage errors name the value of --storage first ("--storage VALUE: ...", a password
    in it as ***); the directory of a journal or SQLite database that cannot be made said
    "cannot create the directory f for the journal f/study.journal: ..." instead. Each now reads
    "--storage VALUE: cannot create the directory DIR: WHY" (exit 2, one line, the password still
    redacted), WHY being the file in the way or what mkdir said."""
    from pathlib import Path

    monkeypatch.chdir(tmp_path)
    (tmp_path / "f").write_text("")
    given = "sqlite:///f/a/study.db?password=s3cr3t"
    rc, out, err = cli("optimize", FLAGSHIP, "--storage", given, "--trials", "1", "--out", tmp_path / "o")
    assert rc == 2 and out == "" and "s3cr3t" not in err, err
    assert err.strip() == ("error: --storage sqlite:///f/a/study.db?password=***: cannot create the directory f/a: "
                           "f exists and is not a directory"), err

    def refuse(self, *args, **kwargs):  # a directory nobody may create (read-only file system, permissions)
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "mkdir", refuse)
    for storage in ("new/study.journal", "journal:new/x"):
        rc, out, err = cli("optimize", FLAGSHIP, "--storage", storage, "--trials", "1", "--out", tmp_path / "o")
        assert rc == 2 and out == "", (storage, err)
        assert err.strip() == f"error: --storage {storage}: cannot create the directory new: Permission denied", err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f"]


def test_a_directory_named_like_a_journal_is_refused(cli, tmp_path, monkeypatch):
    """--storage x.journal where x.journal is a directory is read as a journal path (it ends in
    .journal) and cannot be one: optimize and worker refuse it in one line naming the journal file
    to give instead (exit 2), relative or absolute, and write nothing (no --out, nothing inside)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.journal").mkdir()
    for given in ("x.journal", str(tmp_path / "x.journal")):
        line = f"error: --storage {given}: {given} is a directory; give a journal file in it ({given}/study.journal)"
        for argv in (("optimize", FLAGSHIP, "--storage", given, "--trials", "1", "--out", tmp_path / "o"),
                     ("worker", FLAGSHIP, "--storage", given, "--trials", "1")):
            rc, out, err = cli(*argv)
            assert rc == 2 and out == "" and err.strip() == line, (argv, err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.journal"]
    assert list((tmp_path / "x.journal").iterdir()) == []


def _pg_url():
    url = os.environ.get("CODESIGN_TEST_POSTGRES_URL")
    if not url:
        if os.environ.get("CI"):
            pytest.fail("CI must start PostgreSQL and set CODESIGN_TEST_POSTGRES_URL (see .ci/run)")
        pytest.skip("no PostgreSQL server: set CODESIGN_TEST_POSTGRES_URL=postgresql://user:pw@host/db "
                    "(.ci/run starts one on loopback)")
    return url


@pytest.mark.postgres
def test_postgres_workers_share_one_study(tmp_path):
    import optuna

    from codesign.search import open_storage

    url = _pg_url()
    name = f"pgtest-{os.getpid()}-{int(time.time())}"
    spec = tmp_path / "s.toml"
    spec.write_text(f'include = ["{FLAGSHIP.as_posix()}"]\nname = "{name}"\n[search]\nseed_sweep = 512\n'
                    'reference = "gb200"\n'
                    "gradient_seeds = 0\nbatch_size = 20\n")
    procs = [subprocess.Popen(CODESIGN + ["worker", str(spec), "--storage", url, "--trials", "90", "--json"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(3)]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (o, e) in zip(procs, outs):
        assert p.returncode == 0, e
        pw = url.split("://", 1)[1].split("@")[0].split(":")[-1]
        if len(pw) >= 6:  # a distinctive password (.ci/run uses one) must never be printed
            assert pw not in o + e
    store, _ = open_storage(url, None)
    st = optuna.load_study(study_name=name, storage=store)
    ts = st.get_trials(deepcopy=False)
    done = [t for t in ts if t.state.name == "COMPLETE"]
    assert len({t.number for t in ts}) == len(ts)                  # no duplicated trial
    assert not [t for t in ts if t.state.name in ("RUNNING", "FAIL", "WAITING")]  # no lost or left-over trial
    assert 90 <= len(done) <= 90 + 3 * 20
    # the workers refined the shared front between their batches (`codesign worker` did not)
    assert any(t.user_attrs.get("seed_source") == "refill" for t in done)
    told = sum(json.loads(o)["new_trials"] for o, _ in outs)
    assert told == len(done)
    # the report of the shared study
    rc = subprocess.run(CODESIGN + ["optimize", str(spec), "--storage", url, "--trials", str(len(done)),
                                    "--out", str(tmp_path / "rep"), "--json"], capture_output=True, text=True, timeout=300)
    assert rc.returncode == 0 and json.loads(rc.stdout)["new_trials"] == 0


def test_a_url_whose_driver_is_not_installed_says_what_is_supported(cli, tmp_path, monkeypatch):
    """--storage mysql://... passed SQLAlchemy's "Failed to import DB access module ... Please install
    appropriate one" through. It names the scheme whose driver is missing and the storages codesign
    supports and tests (journal file, sqlite:///, postgresql:// with psycopg2); exit 2, one line, the
    password redacted, nothing written."""
    import importlib.util

    if importlib.util.find_spec("MySQLdb") is not None:
        pytest.skip("a MySQL driver (MySQLdb) is installed here")
    monkeypatch.chdir(tmp_path)
    url = "mysql://u:s3cr3t@localhost/db"
    for argv in (("optimize", FLAGSHIP, "--storage", url, "--trials", "1", "--out", tmp_path / "o"),
                 ("worker", FLAGSHIP, "--storage", url, "--trials", "1")):
        rc, out, err = cli(*argv)
        assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1, (argv, err)
        assert err.startswith("error: --storage mysql://u:***@localhost/db: the database driver for mysql:// "
                              "is not installed"), err
        for supported in ("journal", "sqlite:///", "postgresql://", "psycopg2"):
            assert supported in err, (supported, err)
        assert "Failed to import DB access module" not in err and "s3cr3t" not in err
    assert list(tmp_path.iterdir()) == []


def test_missing_postgres_driver_names_the_extra(monkeypatch, tmp_path):
    # a fresh `pip install -e .` has no PostgreSQL driver: the error says which extra installs one
    import codesign.search as search
    from codesign.errors import CodesignError

    def no_driver(url, **_):
        raise ModuleNotFoundError("No module named 'psycopg2'")

    monkeypatch.setattr(search, "_rdb_storage", no_driver)
    with pytest.raises(CodesignError) as exc:
        search.open_storage("postgresql://u:secret@127.0.0.1/db", tmp_path)
    msg = str(exc.value)
    assert 'pip install -e ".[postgres]"' in msg and "secret" not in msg and "u:***@" in msg


@pytest.mark.slow
def test_seed_designs_interrupted_mid_run_are_evaluated_on_resume(tmp_path):
    """The seed designs (the sweep's front, enqueued once before the first trial) that were running
    when a run was interrupted are enqueued again on resume: they are the search's best starting
    points (an interrupted `--workers 2` run lost all 25 and resumed to a front of 2 designs, not 25)."""
    import optuna

    from codesign.search import _open_study, _prepare
    from codesign.spec import load_spec

    out = tmp_path / "run"
    ctx = _open_study(load_spec(FLAGSHIP), seed=None, out_dir=out, storage=None, repair=True)
    _prepare(ctx, 40, private=True)  # what a run does first: the seeds are enqueued ...
    waiting = ctx.study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.WAITING,))
    seeds = [dict(t.system_attrs["fixed_params"]) for t in waiting]
    assert seeds and all(t.user_attrs.get("seed_source") == "sweep" for t in waiting)
    for _ in seeds:  # ... and taken by workers that are then interrupted: RUNNING, never told
        ctx.study.ask()
    del ctx
    p = subprocess.run(CODESIGN + ["optimize", str(FLAGSHIP), "--trials", "40", "--out", str(out), "--json"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert f"{len(seeds)} trial(s) interrupted mid-batch" in p.stderr
    done = [t for t in _trials(str(out / "study.journal")) if t.state.name == "COMPLETE"]
    assert len(done) == 40
    ran = [t.params for t in done if t.user_attrs.get("seed_source") == "sweep"]
    assert len(ran) == len(seeds)
    for s in seeds:  # every seed design was evaluated after all
        assert any(all(r.get(k) == v for k, v in s.items()) for r in ran), s


def test_readme_says_it_is_the_worker_that_refuses_a_missing_journal_directory(cli, tmp_path):
    """"(a journal path in a directory that does not exist is refused, not created)" read as if every
    --storage refused one; only codesign worker does (it joins a study kept there): codesign
    optimize creates the directory of the journal it starts its study in."""
    from conftest import REPO

    readme = " ".join((REPO / "README.md").read_text().split())
    assert "(a journal path in a directory that does not exist is refused, not created)" not in readme
    assert ("`codesign worker` refuses a journal path or SQLite file in a directory that does not exist "
            "rather than create it") in readme
    assert "`codesign optimize` creates the directory of the journal or SQLite file it starts its study in" in readme
    journal = tmp_path / "new" / "sub" / "study.journal"
    rc, out, err = cli("worker", FLAGSHIP, "--storage", journal, "--trials", "1")
    assert rc == 2 and "does not exist" in err and not (tmp_path / "new").exists(), err
    rc, out, err = cli("optimize", FLAGSHIP, "--storage", journal, "--trials", "1", "--out", tmp_path / "o")
    assert rc in (0, 1) and journal.is_file(), err


def test_the_journal_lock_of_a_relative_path_points_at_the_journal(cli, tmp_path, monkeypatch):
    """Optuna's journal lock is a symlink to the journal; a relative --out made its target relative
    to the link's own directory (runs/x/runs/x/study.journal), so a lock a killed run left could
    never be released: every later run on that directory spun on it forever (fresh-user trial)."""
    made = []
    real = os.symlink

    def symlink(src, dst, *args, **kwargs):
        made.append((str(src), str(dst)))
        return real(src, dst, *args, **kwargs)

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(os, "symlink", symlink)
    rc, out, err = cli("optimize", FLAGSHIP, "--trials", "5", "--out", "runs/x")
    assert rc == 0, err
    locks = [(src, dst) for src, dst in made if dst.endswith("study.journal.lock")]
    assert locks
    for src, dst in locks:  # a symlink's target is read from the link's directory
        assert os.path.samefile(os.path.join(os.path.dirname(dst), src), tmp_path / "runs/x/study.journal")


def test_a_dangling_journal_lock_left_by_a_killed_run_is_cleared(tmp_path):
    """A lock an older codesign left with a relative target points nowhere; Optuna cannot age it
    (its stat fails) and waited forever. One older than the grace period is removed."""
    out = tmp_path / "runs" / "demo"
    rc = subprocess.run(CODESIGN + ["optimize", str(FLAGSHIP), "--trials", "5", "--out", "runs/demo"],
                        cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert rc.returncode == 0, rc.stderr
    lock = out / "study.journal.lock"
    os.symlink("runs/demo/study.journal", lock)  # relative: resolved from runs/demo/, it dangles
    old = time.time() - 60
    os.utime(lock, (old, old), follow_symlinks=False)
    try:
        rc = subprocess.run(CODESIGN + ["optimize", str(FLAGSHIP), "--trials", "10", "--out", "runs/demo"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("optimize waited on the dangling lock")
    assert rc.returncode == 0, rc.stderr
    assert len([t for t in _trials(str(out / "study.journal")) if t.state.name == "COMPLETE"]) == 10


def test_a_worker_refusing_a_changed_spec_points_at_its_own_option(cli, tmp_path):
    """A worker joining a study run with another spec is refused; the message said "Use another
    --out (or --storage)", but `codesign worker` has no --out (fresh-user trial)."""
    journal = tmp_path / "s.journal"
    rc, out, err = cli("worker", FLAGSHIP, "--storage", journal, "--trials", "3")
    assert rc == 0, err
    changed = tmp_path / "changed.toml"
    changed.write_text(f'include = ["{FLAGSHIP.as_posix()}"]\n[workload]\nisl = 4096\n')
    rc, out, err = cli("worker", changed, "--storage", journal, "--trials", "3")
    assert rc == 2 and "was run with a different spec" in err, err
    assert "Use another --storage to start a new study" in err and "--out" not in err, err


def test_a_worker_joining_a_study_of_other_objectives_points_at_its_own_option(cli, tmp_path):
    """The sibling of the changed-spec refusal: "has other objectives; use another --out or
    --storage" named an option `codesign worker` does not have."""
    journal = tmp_path / "o.journal"
    rc, out, err = cli("worker", FLAGSHIP, "--storage", journal, "--trials", "3")
    assert rc == 0, err
    other = tmp_path / "other.toml"
    other.write_text(f'include = ["{FLAGSHIP.as_posix()}"]\n[[search.objectives]]\nmetric = "min_tpot_s"\n'
                     'direction = "minimize"\n')
    rc, out, err = cli("worker", other, "--storage", journal, "--trials", "3")
    assert rc == 2 and "has other objectives; use another --storage" in err and "--out" not in err, err


def test_a_driver_that_fails_to_load_is_not_called_missing(monkeypatch, tmp_path):
    """A driver that is installed but cannot load (psycopg2 without libpq.so.5) is no missing driver
    (review of session 16): the message keeps the loader's reason instead of 'not installed'."""
    import codesign.search as search
    from codesign.errors import CodesignError

    def broken(url, **_):
        try:
            raise ImportError("libpq.so.5: cannot open shared object file: No such file or directory")
        except ImportError as e:  # how Optuna's RDBStorage wraps SQLAlchemy's failed driver import
            raise ImportError("Failed to import DB access module for the specified storage URL. "
                              "Please install appropriate one.") from e

    monkeypatch.setattr(search, "_rdb_storage", broken)
    with pytest.raises(CodesignError) as exc:
        search.open_storage("postgresql://u:secret@127.0.0.1/db", tmp_path)
    msg = str(exc.value)
    assert "libpq.so.5" in msg and "fails to load" in msg and "not installed" not in msg and "secret" not in msg


def test_a_continued_study_draws_new_designs_not_the_first_run_again(cli, tmp_path):
    """Fresh-user trial of session 16: `optimize --trials 50` on a finished 40-trial study re-ran
    trials 10-19 one for one (the sampler restarted from its seed over the same stored population),
    so a continued or resumed search bought repeats. The README promises that raising --trials
    continues the search: the new trials must be new designs (a few repeats of a choice-valued
    design could happen by chance; ten of ten cannot)."""
    out = tmp_path / "cont"
    rc, _, err = cli("optimize", FLAGSHIP, "--trials", "40", "--out", out)
    assert rc in (0, 1), err
    rc, _, err = cli("optimize", FLAGSHIP, "--trials", "50", "--out", out)
    assert rc in (0, 1), err
    done = sorted((t for t in _trials(str(out / "study.journal")) if t.state.name == "COMPLETE"),
                  key=lambda t: t.number)
    assert len(done) == 50
    earlier = [t.params for t in done[:40]]
    repeats = sum(t.params in earlier for t in done[40:])
    assert repeats <= 2, repeats


def test_an_interrupted_worker_leaves_no_running_trial_behind(cli, tmp_path, monkeypatch):
    """Fresh-user trial of session 16: a worker stopped by Ctrl-C mid-batch on a shared storage left
    its batch RUNNING for good (24 of 200 on SQLite): no later run can tell them from another
    worker's, so nothing ever cleans them. The interrupted batch is failed as it stops (exit 130),
    and its enqueued designs are enqueued again."""
    import codesign.search as search

    real, calls = search._record, []

    def interrupted_mid_batch(*a, **k):  # Ctrl-C while the worker tells its second batch
        calls.append(1)
        if len(calls) == 70:
            raise KeyboardInterrupt
        return real(*a, **k)

    monkeypatch.setattr(search, "_record", interrupted_mid_batch)
    db = tmp_path / "w.db"
    rc, out, err = cli("worker", FLAGSHIP, "--storage", f"sqlite:///{db}", "--trials", "200")
    assert rc == 130, err
    states = [t.state.name for t in _trials(f"sqlite:///{db}")]
    assert "RUNNING" not in states and states.count("COMPLETE") >= 1, states


def test_a_signal_inside_the_journal_lock_is_raised_once_the_lock_is_released(tmp_path):
    """Optuna's journal lock breaks on a KeyboardInterrupt raised inside it: one landing in its
    release before the rename made the clean-up unlink a missing file, so SIGTERM became an internal
    FileNotFoundError (exit 3, not 143; seen once in CI) and the lock was left behind. The CLI's
    handler keeps a signal that arrives while the lock is held and raises it as the lock is
    released: the interrupt lands between storage writes, and no lock is left."""
    from codesign import interrupts
    from codesign.search import open_storage

    journal = tmp_path / "s.journal"
    store, _ = open_storage(str(journal), None)
    lock = store._backend._lock
    seen: list[int] = []
    previous = interrupts.catch(seen)
    try:
        assert lock.acquire()
        assert os.path.islink(str(journal) + ".lock")
        signal.raise_signal(signal.SIGTERM)  # lands inside the lock: kept, nothing raised here
        assert seen == []
        with pytest.raises(KeyboardInterrupt):
            lock.release()  # released first, then the kept SIGTERM is raised
        assert seen == [signal.SIGTERM]
        assert not os.path.lexists(str(journal) + ".lock")
        store.get_all_studies()  # the storage still works: its lock is free
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def test_a_signal_while_a_trial_is_asked_leaves_no_trial_running(tmp_path, monkeypatch):
    """A SIGTERM that lands inside ``study.ask()``'s journal write was raised as the write ended,
    after the trial was created RUNNING but before the batch knew it, so the clean-up that fails
    the batch's trials missed it and one trial stayed RUNNING (fresh-user stress test of session
    17: 9 FAIL, 1 RUNNING). The ask is held off as a whole: the trial is in the batch, and failed."""
    import optuna
    from optuna.storages.journal import JournalFileSymlinkLock

    from codesign.cli import main

    asks = {"n": 0, "armed": False}
    ask, acquire = optuna.study.Study.ask, JournalFileSymlinkLock.acquire

    def counting_ask(self, *a, **k):
        asks["n"] += 1
        asks["armed"] = asks["n"] == 10  # the 10th ask of the run
        try:
            return ask(self, *a, **k)
        finally:
            asks["armed"] = False

    def acquire_then_signal(self):
        got = acquire(self)
        if asks["armed"]:
            asks["armed"] = False
            signal.raise_signal(signal.SIGTERM)  # inside the held lock, inside the ask
        return got

    monkeypatch.setattr(optuna.study.Study, "ask", counting_ask)
    monkeypatch.setattr(JournalFileSymlinkLock, "acquire", acquire_then_signal)
    out = tmp_path / "run"
    assert main(["optimize", str(FLAGSHIP), "--trials", "60", "--out", str(out)]) == 143
    monkeypatch.undo()
    states = [t.state.name for t in _trials(str(out / "study.journal"))]
    assert states.count("FAIL") == 10 and "RUNNING" not in states, states  # the 10 asked, all given back
    assert not os.path.lexists(str(out / "study.journal.lock"))


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_an_interrupted_workers_run_leaves_no_trial_running_and_no_lock(tmp_path, signum):
    """``optimize --workers 2`` stopped by SIGTERM (or Ctrl-C, sent to the whole process group as a
    terminal does) killed its workers where they stood: 50-100 trials were left RUNNING, and once
    the journal lock, which the next run waited out (fresh-user stress test of session 17). Each
    worker now handles the signal as the CLI does (its batch given back between storage writes)
    and the parent waits for them."""
    out = tmp_path / "w"
    journal = out / "study.journal"
    # as a terminal's foreground job: a test run started with `&` or nohup passes SIGINT on ignored
    # (the shell's SIG_IGN for background jobs), and the CLI rightly leaves an ignored SIGINT alone,
    # so the Ctrl-C below was ignored and the run went on to its end (exit 0; a pre-check CI started
    # in the background, session 26). Set in the child's Python, not by a preexec_fn (a fork of this
    # multithreaded JAX process)
    terminal = [sys.executable, "-c", "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
                "from codesign.cli import entry; sys.argv[0] = 'codesign'; entry()"]
    cmd = terminal + ["optimize", str(FLAGSHIP), "--trials", "400", "--workers", "2", "--out", str(out)]
    with open(tmp_path / "stderr.txt", "w") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
    deadline = time.time() + 240
    told = 0
    while time.time() < deadline and proc.poll() is None:  # the workers are telling trials
        time.sleep(0.3)
        told = _completed_so_far(journal)
        if told >= 30:
            break
    if signum == signal.SIGINT:
        os.killpg(proc.pid, signum)  # Ctrl-C: the terminal signals the whole group
    else:
        proc.send_signal(signum)  # kill, a batch scheduler: the parent only
    rc = proc.wait(timeout=120)
    stderr = (tmp_path / "stderr.txt").read_text()
    assert told >= 30, "the workers did not get going"
    assert rc == 128 + signum, (rc, stderr)
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr
    states = [t.state.name for t in _trials(str(journal))]
    assert "RUNNING" not in states, (states.count("RUNNING"), stderr)
    assert not os.path.lexists(str(journal) + ".lock")


def test_a_signal_inside_a_gc_callback_is_raised_again_outside_it():
    """A SIGTERM that arrived while JAX's garbage-collection callback ran raised its
    KeyboardInterrupt there, where Python swallows it ("Exception ignored in: <function
    _xla_gc_callback>" and a traceback on stderr): the search ran on to all its trials and only
    then exited 143 (fresh-user stress test of session 17, 2 of 20 runs). The handler sees it is
    inside a gc callback and raises the signal again a moment later, outside."""
    import gc

    from codesign import interrupts

    armed = [False]

    def callback(phase, info):
        if phase == "start" and armed[0]:
            armed[0] = False
            signal.raise_signal(signal.SIGTERM)

    seen: list[int] = []
    previous = interrupts.catch(seen)
    gc.callbacks.append(callback)
    try:
        gc.collect()  # a full collection first (seconds on a big test-session heap): the armed one is short
        armed[0] = True
        start = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            gc.collect(0)
            time.sleep(30.0)  # the signal comes again REDELIVER_S later, waking the sleep
        # woken by the signal, not by the sleep's end (a wide margin: CI runs on a loaded machine;
        # a lost signal fails pytest.raises at 30 s)
        assert time.monotonic() - start < 10.0
        assert seen == [signal.SIGTERM]
    finally:
        gc.callbacks.remove(callback)
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def test_a_signal_while_a_swallowed_interrupt_is_owed_is_only_noted():
    """Ctrl-C to a ``--workers`` group: a worker's first KeyboardInterrupt was swallowed (a gc
    callback), and a second signal landed while ``sys.unraisablehook`` started the re-delivery
    timer; the handler raised there, and stderr showed "Exception ignored in
    sys.unraisablehook" and a traceback (CI of stop 31). The second signal is now only noted;
    the re-delivery still raises, once, in the main thread."""
    import types

    from codesign import interrupts

    seen: list[int] = []
    previous = interrupts.catch(seen)
    try:
        handler = signal.getsignal(signal.SIGTERM)
        with pytest.raises(KeyboardInterrupt):
            handler(signal.SIGTERM, None)  # the first signal raises ...
        swallowed = types.SimpleNamespace(exc_value=KeyboardInterrupt(), exc_type=KeyboardInterrupt,
                                          exc_traceback=None, err_msg=None, object=None)
        interrupts._unraisable(swallowed)  # ... where Python swallows it: a re-delivery is owed
        handler(signal.SIGTERM, None)  # the second signal, inside that window: noted, not raised
        assert seen == [signal.SIGTERM, signal.SIGTERM]
        start = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            time.sleep(30.0)  # the owed signal comes REDELIVER_S later, waking the sleep
        assert time.monotonic() - start < 10.0
    finally:
        seen.append(0)
        for signum, h in previous.items():
            signal.signal(signum, h)


def test_a_journal_storage_pickles_and_still_works(tmp_path):
    """Optuna's JournalStorage pickles (multiprocessing, joblib); the lock class holding signals
    off was first defined inside a function, and pickling the storage failed ("Can't pickle local
    object", review of session 17)."""
    import pickle

    import optuna

    from codesign.search import open_storage

    store, _ = open_storage(str(tmp_path / "p.journal"), None)
    optuna.create_study(study_name="p", storage=store)
    again = pickle.loads(pickle.dumps(store))
    assert [s.study_name for s in again.get_all_studies()] == ["p"]
    optuna.create_study(study_name="q", storage=again)  # writes through the unpickled lock
    assert not os.path.lexists(str(tmp_path / "p.journal.lock"))


def _dead_worker(cli, url, *, enqueue):
    """A study of 5 complete trials in ``url`` and a simulated dead worker: two trials asked (the
    first an enqueued copy of a complete design where ``enqueue``), a heartbeat recorded for each,
    never told. Returns (the enqueued design or None, the two trials)."""
    import optuna

    from codesign.search import open_storage

    rc, _, err = cli("worker", FLAGSHIP, "--storage", url, "--trials", "5")
    assert rc == 0, err
    store, _ = open_storage(url, None)
    study = optuna.load_study(study_name="jalapeno-gpt-oss-120b", storage=store)
    design = None
    if enqueue:
        design = dict(next(t for t in study.get_trials(deepcopy=False) if t.state.name == "COMPLETE").params)
        study.enqueue_trial(design)
    orphans = [study.ask(), study.ask()]
    for t in orphans:
        store.record_heartbeat(t._trial_id)
    return design, orphans


@pytest.mark.filterwarnings("ignore:Heartbeat of storage")  # the simulated dead worker's own ask
def test_a_trial_left_running_by_a_dead_worker_is_failed_and_its_design_run_again(cli, tmp_path, monkeypatch):
    """A worker killed without a word (SIGKILL, the OOM killer, a lost machine) left its running trials
    RUNNING for good in a database storage, and the study counted them towards --trials: it ended
    short of its trial count. With heartbeats (search.HEARTBEAT_S; here 1 s, so a trial unheard of
    for 6 s is stale) the next batch of a worker fails them and enqueues an enqueued design again.
    The dead worker is simulated: one enqueued trial asked and one asked from the sampler, each with a
    heartbeat recorded, then left without a tell."""
    from codesign.search import HEARTBEAT_GRACE

    monkeypatch.setenv("CODESIGN_HEARTBEAT_S", "1")
    url = f"sqlite:///{tmp_path / 'study.db'}"
    design, orphans = _dead_worker(cli, url, enqueue=True)  # the enqueued design first, then the sampler's
    time.sleep(HEARTBEAT_GRACE * 1 + 1.5)  # unheard of for longer than the grace period
    rc, _, err = cli("worker", FLAGSHIP, "--storage", url, "--trials", "10")
    assert rc == 0, err
    by = {t.number: t for t in _trials(url)}
    assert by[orphans[0].number].system_attrs["fixed_params"] == design  # the enqueued one
    assert "fixed_params" not in by[orphans[1].number].system_attrs
    assert all(by[t.number].state.name == "FAIL" for t in orphans)
    assert not [t for t in by.values() if t.state.name == "RUNNING"]
    complete = [t for t in by.values() if t.state.name == "COMPLETE"]
    assert len(complete) == 10  # the two stale trials no longer count towards --trials
    # the enqueued design was given back and run again (the sampler's own is not requeued)
    assert sum(t.params == design for t in complete) == 2


def test_a_bad_heartbeat_override_is_refused(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("CODESIGN_HEARTBEAT_S", "0.5")
    rc, _, err = cli("worker", FLAGSHIP, "--storage", f"sqlite:///{tmp_path / 's.db'}", "--trials", "3")
    assert rc == 2 and "CODESIGN_HEARTBEAT_S='0.5': expected a whole number of seconds >= 1" in err, err


@pytest.mark.filterwarnings("ignore:Heartbeat of storage")  # the simulated dead worker's own ask
def test_a_worker_waits_for_a_dead_workers_trials_instead_of_leaving_the_study_short(cli, tmp_path, monkeypatch):
    """The study is full only because of a dead process's running trials (5 complete + 2 orphans of
    --trials 7): the worker joining at once used to stop with 5 complete. It says it waits, fails
    them once they are unheard of for the grace period (6 s at CODESIGN_HEARTBEAT_S=1) and runs
    their places."""
    monkeypatch.setenv("CODESIGN_HEARTBEAT_S", "1")
    url = f"sqlite:///{tmp_path / 'study.db'}"
    _dead_worker(cli, url, enqueue=False)
    rc, _, err = cli("worker", FLAGSHIP, "--storage", url, "--trials", "7")
    assert rc == 0, err
    assert "waiting for 2 running trial(s) of other processes (a trial whose process is silent for 6 s is " \
           "failed and run again)" in err, err
    states = Counter(t.state.name for t in _trials(url))
    assert states == {"COMPLETE": 7, "FAIL": 2}, states


def test_a_rerun_without_the_storage_of_the_report_is_refused(cli, tmp_path):
    """A run stored in a database (--storage) writes pareto.json in --out but no study.journal.
    Rerunning the same command without --storage started a new study in out/study.journal and
    overwrote that report (fresh-user trial, session 27). It is refused, naming the storage to
    rerun with, and nothing is written; with that storage the study resumes."""
    url = f"sqlite:///{tmp_path / 'db' / 'study.db'}"
    out = tmp_path / "out"
    rc, _, err = cli("optimize", FLAGSHIP, "--storage", url, "--trials", "3", "--out", out)
    assert rc in (0, 1), err
    before = (out / "pareto.json").read_bytes()
    rc, _, err = cli("optimize", FLAGSHIP, "--trials", "3", "--out", out)
    assert rc == 2 and "Traceback" not in err
    assert f"holds the report of a study stored in {url} (its pareto.json); rerun with --storage {url}" in err
    assert not (out / "study.journal").exists() and (out / "pareto.json").read_bytes() == before
    rc, out_text, err = cli("optimize", FLAGSHIP, "--storage", url, "--trials", "4", "--out", out)
    assert rc in (0, 1), err
    assert "resuming: 3 completed trials" in out_text + err


def test_a_run_with_storage_into_another_storages_report_is_refused(cli, tmp_path):
    """optimize's output directory holds a study in its own study.journal; a run of the same spec
    with --storage elsewhere was accepted there and rewrote that report with the other study's
    (fresh-user trial, session 36). Refused, naming where the report's study is kept; nothing is
    written. The same for a report of one --storage and a run with another."""
    out = tmp_path / "out"
    rc, _, err = cli("optimize", FLAGSHIP, "--trials", "3", "--out", out)
    assert rc in (0, 1), err
    before = (out / "pareto.json").read_bytes()
    other = tmp_path / "w" / "study.journal"
    rc, _, err = cli("optimize", FLAGSHIP, "--storage", other, "--trials", "3", "--out", out)
    assert rc == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert f"holds the report of a study stored in {out / 'study.journal'}, not in --storage {other}; " \
           "rerun without --storage to resume it" in err, err
    assert (out / "pareto.json").read_bytes() == before and not other.exists()

    url = f"sqlite:///{tmp_path / 'db' / 'study.db'}"
    out2 = tmp_path / "out2"
    rc, _, err = cli("optimize", FLAGSHIP, "--storage", url, "--trials", "3", "--out", out2)
    assert rc in (0, 1), err
    url2 = f"sqlite:///{tmp_path / 'db' / 'other.db'}"
    rc, _, err = cli("optimize", FLAGSHIP, "--storage", url2, "--trials", "3", "--out", out2)
    assert rc == 2 and f"stored in {url}, not in --storage {url2}; rerun with --storage {url}" in err, err
    rc, _, err = cli("optimize", FLAGSHIP, "--storage", url, "--trials", "4", "--out", out2)
    assert rc in (0, 1), err  # its own storage resumes
