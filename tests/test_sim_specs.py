"""Device presets load, agree with the published figures, and bad spec files are named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from accelview.capture.sim.device.specs import DeviceSpec, list_presets, load_spec

PRESETS = ("gen5x16-141g", "gen4x16-64g", "gen4x8-24g")


def test_presets_are_listed_and_load() -> None:
    assert set(PRESETS) <= set(list_presets())
    for name in list_presets():
        spec = load_spec(name)
        assert isinstance(spec, DeviceSpec)
        assert spec.name == name
        assert spec.matrix_flops("fp8") == pytest.approx(2 * spec.matrix_flops("bf16"), rel=0.01)
        assert spec.matrix_flops("fp32") < spec.matrix_flops("bf16") / 4


def test_large_card_matches_the_datasheet_figures() -> None:
    spec = load_spec("gen5x16-141g")
    assert spec.hbm_bytes_per_s == pytest.approx(4.8e12)
    assert spec.memory.hbm_gb == pytest.approx(141)
    assert spec.matrix_flops("bf16") == pytest.approx(989e12, rel=0.01)
    assert spec.ridge_point("bf16") == pytest.approx(206, rel=0.01)  # REFERENCE.md: ~206 on H200
    assert (spec.pcie.gen, spec.pcie.lanes) == (5, 16)


def test_narrow_card_has_an_x8_link() -> None:
    spec = load_spec("gen4x8-24g")
    assert (spec.pcie.gen, spec.pcie.lanes) == (4, 8)
    assert load_spec("gen4x16-64g").pcie.lanes == 16


def test_a_spec_loads_from_a_path(tmp_path: Path) -> None:
    raw = _raw("gen4x16-64g")
    raw["name"] = "custom"
    path = tmp_path / "custom.json"
    path.write_text(json.dumps(raw))
    assert load_spec(path).name == "custom"
    assert load_spec(str(path)).source == str(path)


def _raw(name: str) -> dict:
    from importlib import resources

    return json.loads(resources.files("accelview.resources").joinpath("specs", f"{name}.json").read_text())


@pytest.mark.parametrize(
    ("mutate", "problem"),
    [
        (lambda r: r["memory"].pop("hbm_gb_per_s"), "memory: missing hbm_gb_per_s"),
        (lambda r: r["pcie"].update(lanes=12), "pcie.lanes must be"),
        (lambda r: r["pcie"].update(mps=300), "pcie.mps must be"),
        (lambda r: r["compute"].update(matrix_engines=0), "compute.matrix_engines must be a positive int"),
        (lambda r: r["compute"]["matrix_tflops"].pop("fp8"), "compute.matrix_tflops must give exactly"),
        (lambda r: r["memory"].update(efficiency_sequential=1.5), "must be in (0, 1]"),
        (lambda r: r["timing"].update(surprise=1), "timing: unknown key(s) surprise"),
        (lambda r: r.update(format="v0"), "format must be"),
        (lambda r: r.pop("host"), "section 'host' must be an object"),
    ],
)
def test_bad_spec_names_the_file_and_the_problem(tmp_path: Path, mutate, problem: str) -> None:
    raw = _raw("gen5x16-141g")
    mutate(raw)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(raw))
    with pytest.raises(ValueError) as info:
        load_spec(path)
    message = str(info.value)
    assert message.startswith(f"{path}: ")
    assert problem in message
    assert "\n" not in message


def test_unreadable_and_malformed_specs(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"missing\.json: cannot read spec file"):
        load_spec(tmp_path / "missing.json")
    broken = tmp_path / "broken.json"
    broken.write_text('{"format": ')
    with pytest.raises(ValueError, match=r"broken\.json: not valid JSON \(line 1"):
        load_spec(broken)
    with pytest.raises(ValueError, match="no-such-card: no such device preset; known: gen4x16-64g"):
        load_spec("no-such-card")
