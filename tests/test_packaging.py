"""Packaging: every package folder is listed in pyproject and lands in the wheel under accelview.*
(which layers may import what is tests/test_layering.py's job)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FOLDERS = {"app": "accelview.app", "capture": "accelview.capture", "model": "accelview.model",
           "resources": "accelview.resources"}


def _packages_on_disk() -> set[str]:
    found = set()
    for folder, name in FOLDERS.items():
        for init in (REPO / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(REPO / folder).parts
            found.add(".".join((name, *rel)))
    return found


def test_every_package_folder_is_listed_in_pyproject():
    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    assert listed == _packages_on_disk()


def test_wheel_holds_every_folder_under_the_accelview_namespace(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    for folder in FOLDERS:
        shutil.copytree(REPO / folder, src / folder, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(tmp_path),
         str(src)],
        check=True, capture_output=True,
    )
    wheel = next(tmp_path.glob("accelview-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names}
    assert tops <= {"accelview", next(t for t in tops if t.endswith(".dist-info"))}
    for package in _packages_on_disk():
        assert package.replace(".", "/") + "/__init__.py" in names, package
    assert "accelview/resources/demo.h5" in names
    # Every module on disk is in the wheel (a forgotten module would only show in a real install).
    for folder, name in FOLDERS.items():
        for py in (REPO / folder).rglob("*.py"):
            assert "/".join((*name.split("."), *py.relative_to(REPO / folder).parts)) in names
