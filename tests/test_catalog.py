"""The catalog data files load and validate; schema errors are loud; guidance maps to levels."""

from __future__ import annotations

import tomllib

import pytest

from console.catalog import CatalogError, catalog_path, load_framework, load_guidance, parse_framework
from console.errors import SpecError
from console.plan import catalog_levels, recommend_levels, touched_areas

pytestmark = pytest.mark.timeout(60)


def test_frameworks_load_with_their_levels_and_variants():
    assert [lv.number for lv in load_framework("nemo-rl").levels] == [0, 1, 2, 3, 4, 5, 6]
    assert [lv.number for lv in load_framework("verl").levels] == [0, 1, 2, 3, 4, 5]
    assert [lv.number for lv in load_framework("demo").levels] == [0]
    assert {v.name for v in load_framework("nemo-rl").variants} == {
        "delta-compression",
        "no-cuda-graphs",
        "moe-ep",
        "vlm",
        "audio",
        "eagle-mtp",
    }
    assert {v.name for v in load_framework("verl").variants} == {
        "no-reward-model",
        "enforce-eager",
        "moe-ep",
        "ray-pythonpath",
    }
    assert [v.name for v in load_framework("demo").variants] == ["nan", "lr-scale", "adv-mean"]
    with pytest.raises(CatalogError, match="unknown framework"):
        load_framework("guidance")


def test_every_step_has_proves_and_criteria():
    for fw in ("nemo-rl", "verl", "demo"):
        cat = load_framework(fw)
        steps = [
            *cat.setup,
            *cat.before_train,
            *(s for lv in cat.levels for s in lv.steps),
            *(s for v in cat.variants for s in v.steps),
        ]
        for s in steps:
            assert s.proves and s.criteria, (fw, s.name)
        for lv in cat.levels:
            assert lv.required_when and lv.proves


def _nemo_data() -> dict:
    return tomllib.loads(catalog_path("nemo-rl").read_text())


def test_schema_errors_are_loud():
    data = _nemo_data()
    data["levels"][0]["steps"][0]["argvv"] = ["x"]
    with pytest.raises(CatalogError, match=r"^t: levels\[0\]\.steps\[0\]\.argvv: unknown key$"):
        parse_framework(data, "t")
    data = _nemo_data()
    data["levels"][0]["steps"][0]["kind"] = "training"
    with pytest.raises(CatalogError, match=r"^t: levels\[0\]\.steps\[0\]\.kind: expected 'setup' or"):
        parse_framework(data, "t")
    data = _nemo_data()
    data["levels"][0]["steps"][0]["gpus"] = "2"
    with pytest.raises(CatalogError, match=r"^t: levels\[0\]\.steps\[0\]\.gpus: expected int, got str$"):
        parse_framework(data, "t")
    data = _nemo_data()
    data["variants"][0]["targets"] = ["no-such-step"]
    with pytest.raises(CatalogError, match="is not a level step"):
        parse_framework(data, "t")
    data = _nemo_data()
    data["variants"][0]["levels"] = [9]
    with pytest.raises(CatalogError, match="unknown level"):
        parse_framework(data, "t")


def test_adding_a_level_is_a_data_change():
    data = _nemo_data()
    data["levels"].append(
        {
            "number": 7,
            "title": "T",
            "required_when": "W",
            "proves": "P",
            "gpus": 1,
            "steps": [
                {
                    "name": "l7-x",
                    "title": "x",
                    "argv": ["echo", "{repo}"],
                    "cwd": "repo",
                    "kind": "train",
                    "deliverable": "variant",
                    "proves": "p",
                }
            ],
        }
    )
    cat = parse_framework(data, "t")
    assert cat.level(7).steps[0].argv == ("echo", "{repo}")


def test_catalog_levels_and_guidance():
    levels = catalog_levels("nemo-rl")
    assert levels[2].variants == ["delta-compression"] and levels[2].gpus == 2
    assert levels[5].variants == ["vlm", "audio", "eagle-mtp"]
    assert "HF export" in levels[2].required_when
    assert recommend_levels("nemo-rl", []) == [0]
    assert recommend_levels("nemo-rl", ["checkpoint-export", "parallelism"]) == [0, 1, 2, 4]
    assert recommend_levels("verl", ["checkpoint-export", "parallelism"]) == [0, 1, 2]
    assert recommend_levels("verl", ["optimizer-loss"]) == [0, 5]
    assert recommend_levels("nemo-rl", ["architecture", "optimizer-loss"]) == [0, 5, 6]
    ids = [a for a, _ in touched_areas()]
    assert {
        "new-provider",
        "config-only",
        "checkpoint-export",
        "weight-mapping-refit",
        "parallelism",
        "architecture",
        "optimizer-loss",
    } <= set(ids)
    assert len(load_guidance()) == len(ids)
    with pytest.raises(SpecError):
        recommend_levels("nemo-rl", ["nope"])
    with pytest.raises(SpecError):
        catalog_levels("nope")


def test_load_toml_is_the_one_loader_with_one_error(tmp_path):
    """A bare name reads the catalog folder; a path is read as given, again after it changes;
    missing or malformed files are the one CatalogError naming the file and the reason."""
    from console.catalog import load_toml
    from console.triage import rules

    assert rules.CatalogError is CatalogError  # one class, whoever raises it
    assert load_toml("slurm") is load_toml("slurm.toml")  # parsed once
    assert "states" in load_toml("slurm")
    path = tmp_path / "x.toml"
    path.write_text("a = 1\n")
    assert load_toml(path) == {"a": 1}
    path.write_text("a = 22\n")
    assert load_toml(path) == {"a": 22}
    path.write_text("a = [\n")
    with pytest.raises(CatalogError, match=r"x\.toml: not valid TOML"):
        load_toml(path)
    with pytest.raises(CatalogError, match=r"nope\.toml: cannot read"):
        load_toml("nope")
    with pytest.raises(CatalogError, match=r"x\.toml: not valid TOML"):
        rules.load_catalog(path)
