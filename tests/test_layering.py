"""Layering: the import-linter contracts in pyproject.toml hold, and no module outside the Qt app
(nor the CLI's text commands) loads Qt when imported or run in a fresh process."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# Folders whose every module must import without Qt, and the package each installs as.
QT_FREE = {"model": "accelview.model", "capture": "accelview.capture", "resources": "accelview.resources",
           "app/cli": "accelview.app.cli"}
QT_PACKAGES = ("PySide6", "shiboken6", "pyqtgraph")


def qt_free_modules() -> list[str]:
    """Every module under the Qt-free folders, by its installed name (``__main__`` scripts left out)."""
    names = []
    for folder, package in QT_FREE.items():
        for py in sorted((REPO / folder).rglob("*.py")):
            parts = py.relative_to(REPO / folder).with_suffix("").parts
            if parts[-1] == "__main__":
                continue
            if parts[-1] == "__init__":
                parts = parts[:-1]
            names.append(".".join((package, *parts)))
    return names


def test_import_contracts_hold():
    contracts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    lint_imports = Path(sys.executable).parent / "lint-imports"
    # From the repository root it reads pyproject.toml there (import-linter 2.1 takes no config argument).
    done = subprocess.run([str(lint_imports), "--no-cache"], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    # Every contract in pyproject was checked, and kept.
    assert re.search(rf"Contracts: {len(contracts)} kept, 0 broken", done.stdout), done.stdout


# Imports each module in turn and names the first one after which Qt is loaded; then runs the
# CLI's commands that only print, which must not load Qt either.
_PROBE = """
import contextlib, io, json, sys
from importlib import import_module

def qt():
    return sorted(m for m in sys.modules if m.split(".")[0] in {qt_packages!r})

culprits = {{}}
for name in {modules!r}:
    if qt():
        break
    import_module(name)
    if qt():
        culprits[name] = qt()[:3]
from accelview.app.cli.main import demo_capture, main
demo = str(demo_capture())
ran = {{}}
for argv in (["info", demo], ["analyze", demo], ["metrics"]):
    if not qt():
        with contextlib.redirect_stdout(io.StringIO()):
            ran[" ".join(argv[:1])] = main(argv)
        if qt():
            culprits["accelview " + argv[0]] = qt()[:3]
print(json.dumps({{"culprits": culprits, "ran": ran}}))
"""


def test_no_module_outside_the_app_loads_qt():
    modules = qt_free_modules()
    assert len(modules) > 100 and "accelview.capture.sim.device.engine" in modules
    code = _PROBE.format(modules=modules, qt_packages=QT_PACKAGES)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["culprits"] == {}, "these load Qt: " + repr(result["culprits"])
    assert result["ran"] == {"info": 0, "analyze": 0, "metrics": 0}
