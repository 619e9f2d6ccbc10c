"""Triage rules and engine on fixture logs written from the reference log formats."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from console.errors import ConsoleError
from console.triage import scan
from console.triage.engine import TriageEngine
from console.triage.rules import CATALOG, CLASS_IDS, CatalogError, default_catalog, parse_catalog
from console.triage.scan import triage_files

pytestmark = pytest.mark.timeout(60)

FIXTURES = Path(__file__).parent / "fixtures" / "triage"
EXPECTED = json.loads((FIXTURES / "expected.json").read_text())


def test_catalog_covers_every_class_and_validates() -> None:
    cat = default_catalog()
    classes_with_rules = {r.cls for r in cat.rules} | {r.cls for r in cat.frame_rules}
    # every DESIGN class has advice; every class but the decided ones (unknown/teardown) has a rule
    for cid in CLASS_IDS:
        assert cat.classes[cid].advice
        if cid not in ("unknown_error", "teardown_crash"):
            assert cid in classes_with_rules, cid
    for rule in cat.rules:
        for lit in rule.literals:
            assert lit, rule.id


def test_catalog_rejects_bad_data() -> None:
    with pytest.raises(CatalogError):
        parse_catalog({"classes": {}})
    import tomllib

    data = tomllib.loads(CATALOG.read_text())
    data["rule"][0]["regex"] = "("
    with pytest.raises(CatalogError, match="bad regex"):
        parse_catalog(data)


def test_stack_module_token_reads_the_import_policy() -> None:
    """``{bridge_modules}`` in a pattern is the [imports] list: adding a module there reaches the
    patterns too, and a catalog with the token but without the list is refused."""
    import tomllib

    data = tomllib.loads(CATALOG.read_text())
    cat = parse_catalog(data)
    rule = next(r for r in cat.rules if r.id == "import_name_from_bridge_stack")
    assert rule.regex.search("ImportError: cannot import name 'X' from 'megatron.core.utils'")
    assert not rule.regex.search("ImportError: cannot import name 'X' from 'newstack.core'")
    data["imports"]["bridge_modules"] = [*data["imports"]["bridge_modules"], "newstack"]
    rule = next(r for r in parse_catalog(data).rules if r.id == "import_name_from_bridge_stack")
    assert rule.regex.search("ImportError: cannot import name 'X' from 'newstack.core'")
    exc = next(e for e in parse_catalog(data).exceptions if e.id == "exc_bridge_stack_attribute")
    assert exc.message_re is not None and exc.message_re.search("module 'newstack.mpu' has no attribute 'x'")
    del data["imports"]["bridge_modules"]
    with pytest.raises(CatalogError, match="bridge_modules"):
        parse_catalog(data)


def test_entry_points_token_reads_the_import_list() -> None:
    """``{entry_points}`` in a pattern is the [imports] list of regex fragments (not escaped): a program added
    there reaches the patterns, and a catalog with the token but without the list is refused."""
    import tomllib

    data = tomllib.loads(CATALOG.read_text())
    rule = next(r for r in parse_catalog(data).rules if r.id == "env_entry_point_not_on_path")
    assert rule.regex.search("/bin/sh: 1: python3.11: not found")
    assert not rule.regex.search("/bin/sh: 1: newtool: not found")
    data["imports"]["entry_points"] = [*data["imports"]["entry_points"], "newtool"]
    rule = next(r for r in parse_catalog(data).rules if r.id == "env_entry_point_not_on_path")
    assert rule.regex.search("zsh: command not found: newtool")
    del data["imports"]["entry_points"]
    with pytest.raises(CatalogError, match="entry_points"):
        parse_catalog(data)


def test_exact_remedies() -> None:
    cat = default_catalog()
    assert cat.classes["rocr_visible_devices"].remedy["unset"] == ["ROCR_VISIBLE_DEVICES"]
    hf = cat.classes["hf_rate_limit"].remedy
    assert hf["env"] == {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    assert hf["overrides"] == ["policy.model_name=<snapshot-path>", "policy.tokenizer.name=<snapshot-path>"]
    cg = cat.classes["cuda_graph_crash"].remedy["overrides"]
    assert cg == [
        "policy.generation.mcore_generation_config.num_cuda_graphs=null",
        "policy.generation.mcore_generation_config.use_cuda_graphs_for_non_decode_steps=false",
    ]
    assert "NRL_IGNORE_TP_ACCURACY_CHECK" in cat.classes["tp_accuracy_guard"].remedy["unset"]
    assert cat.classes["container_venv_mismatch"].remedy["env"] == {"NRL_FORCE_REBUILD_VENVS": "true"}
    nospace = cat.classes["no_space"]
    assert not any(nospace.remedy.values())  # not a rerun: steps are in the advice
    assert "HF_HUB_CACHE" in nospace.advice and "MODEL_PATH" in nospace.advice
    py3 = next(r for r in cat.rules if r.id == "python3_config_missing")
    assert "LIBEXT" in (py3.advice or "") and "EXT_SUFFIX" in (py3.advice or "")


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture(name: str) -> None:
    exp = EXPECTED[name]
    res = triage_files([FIXTURES / f"{name}.log"], exit_code=exp.get("exit_code"))
    primary = res["primary"] or {}
    assert res["verdict"] == exp["verdict"], (res["verdict"], primary)
    assert primary.get("class") == exp["class"], primary
    if exp.get("rule"):
        rules = {f["rule"] for f in res["findings"]} | {primary.get("rule")}
        assert exp["rule"] in rules, rules
    if exp["verdict"] == "Pass":
        assert all(f["verdict"] == "Noise" for f in res["findings"])
    if primary:
        assert set(primary["remedy"]) == {"env", "overrides", "unset"}
        assert primary["advice"]


def test_every_rule_has_a_fixture() -> None:
    cat = default_catalog()
    hit: set[str] = set()
    real = json.loads((FIXTURES / "real" / "sources.json").read_text())
    logs = [(FIXTURES / f"{n}.log", e.get("exit_code")) for n, e in EXPECTED.items()]
    logs += [(FIXTURES / "real" / f"{n}.log", e.get("exit_code")) for n, e in real.items()]
    for path, code in logs:
        res = triage_files([path], exit_code=code)
        hit |= {part for f in res["findings"] for part in f["rule"].split(">")[0].split("+")}
    ids = {r.id for r in cat.rules} | {r.id for r in cat.frame_rules}
    assert ids - hit == set()


def test_live_feed_equals_file_scan() -> None:
    for name in ("chained_cause_first", "nemo_pass", "generation_swallowed", "teardown_traceback"):
        path = FIXTURES / f"{name}.log"
        eng = TriageEngine("unknown")
        live: list[dict] = []
        for i, line in enumerate(path.read_bytes().split(b"\n"), 1):
            live += eng.feed(i, line.decode())
        code = EXPECTED[name].get("exit_code")
        assert eng.result(code)["primary"] == triage_files([path], exit_code=code)["primary"]
        assert all(set(f) >= {"class", "verdict", "line", "evidence"} for f in live)


def test_root_cause_is_first_causal_error() -> None:
    res = triage_files([FIXTURES / "chained_cause_first.log"])
    assert res["primary"]["class"] == "cuda_oom"
    oom = next(f for f in res["findings"] if f["class"] == "cuda_oom")
    assert oom["count"] == 1 + 3  # the repeated-across-cluster line counts 3 more
    assert res["framework"] == "nemo-rl"


def test_cuda_graph_advice_keeps_both_logs_and_verl_remedy() -> None:
    res = triage_files([FIXTURES / "cuda_graph_megatron_ima.log"])
    assert (
        "reduced-optimization pass" in res["primary"]["advice"]
        and "keep both logs" in res["primary"]["advice"]
    )
    res = triage_files([FIXTURES / "cuda_graph_capture.log"])
    assert res["framework"] == "verl"
    assert res["primary"]["remedy"]["overrides"] == ["actor_rollout_ref.rollout.enforce_eager=True"]


def test_noise_never_fails_and_exit_code_rules() -> None:
    path = FIXTURES / "noise_del_traceback.log"
    assert triage_files([path], exit_code=0)["verdict"] == "Pass"
    # the same log with a non-zero exit after completion: a teardown crash, not unknown_error
    res = triage_files([path], exit_code=1)
    assert res["verdict"] == "Fail" and res["primary"]["class"] == "teardown_crash"
    inc = triage_files([FIXTURES / "incomplete.log"], exit_code=0)
    assert inc["verdict"] == "Incomplete" and inc["progress"] == {"step": 2, "total": 2}


def test_chunk_boundaries_and_giant_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scan, "CHUNK", 4096)
    monkeypatch.setattr(scan, "LINE_CAP", 2048)
    filler = "(MegatronPolicyWorker pid=1) ▶ Training policy...\n" * 500
    giant = "x" * 50_000  # no newline for 50 kB: classified on its first LINE_CAP bytes, no hang
    body = filler + giant + "\n" + filler + "torch.OutOfMemoryError: CUDA out of memory.\n" + filler
    p = tmp_path / "big.log"
    p.write_text(body)
    res = triage_files([p])
    want = body[: body.index("torch.OutOfMemoryError")].count("\n") + 1
    assert res["primary"]["class"] == "cuda_oom" and res["primary"]["line"] == want


def test_unreadable_and_multiple_files(tmp_path: Path) -> None:
    with pytest.raises(ConsoleError, match="cannot read"):
        triage_files([tmp_path / "missing.log"])
    with pytest.raises(ConsoleError, match="directory"):
        triage_files([tmp_path])
    res = triage_files([FIXTURES / "nemo_pass.log", FIXTURES / "hf_429.log"])
    assert res["primary"]["class"] == "hf_rate_limit" and res["primary"]["file"].endswith("hf_429.log")


def test_secrets_redacted_in_evidence(tmp_path: Path) -> None:
    p = tmp_path / "s.log"
    p.write_text(
        "HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz123456 huggingface_hub.errors.HfHubHTTPError: "
        "429 Client Error: Too Many Requests for url: https://huggingface.co/api/models/x\n"
    )
    out = json.dumps(triage_files([p]))
    assert "hf_abcdefghijklmnopqrstuvwxyz" not in out and "429" in out


def test_hang_from_monitor() -> None:
    eng = TriageEngine("nemo-rl")
    eng.feed(1, "========================= Step 1/2 =========================")
    eng.note_hang(1800.0)
    res = eng.result()
    assert res["verdict"] == "Fail" and res["primary"]["class"] == "hang"


def test_pure_python_fallback_matches(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Without the optional Aho-Corasick package the results are the same."""
    import builtins

    from console.triage import engine as engine_mod

    real_import = builtins.__import__

    def no_ac(name: str, *a, **k):  # noqa: ANN002, ANN003, ANN202
        if name == "ahocorasick_rs":
            raise ImportError(name)
        return real_import(name, *a, **k)

    names = (
        "chained_cause_first",
        "rocr_verl_guard",
        "nemo_pass",
        "noise_del_traceback",
        "cuda_graph_frames",
    )
    before = {n: triage_files([FIXTURES / f"{n}.log"]) for n in names}
    monkeypatch.setattr(builtins, "__import__", no_ac)
    assert engine_mod._line_automaton(["x"]) is None
    assert scan.make_finder(["x"])[1] == "regex"
    for n in names:
        assert triage_files([FIXTURES / f"{n}.log"]) == before[n]
    raw = tmp_path / "bin.log"
    raw.write_bytes(b"\x00\xff\xfe garbage\n\x1b[31mRuntimeError: CUDA error: out of memory\x1b[0m\r\n")
    assert triage_files([raw])["primary"]["class"] == "cuda_oom"
