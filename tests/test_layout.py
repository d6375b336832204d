"""The source layout keeps `platform/` a source root that never shadows the standard library."""

from __future__ import annotations

import platform
import sys
import sysconfig
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_import_platform_gives_the_standard_library_module() -> None:
    assert Path(platform.__file__).parent == Path(sysconfig.get_paths()["stdlib"])
    assert platform.system()
    assert platform.python_version().startswith("3.11")


def test_platform_folder_is_not_a_package() -> None:
    assert not (ROOT / "platform" / "__init__.py").exists()


def test_no_module_in_a_source_root_shadows_the_standard_library() -> None:
    # Packages only: platform/ itself is a plain folder (no __init__.py), which never wins over platform.py.
    at_top = {path.stem for path in ROOT.iterdir() if path.suffix == ".py" or (path / "__init__.py").exists()}
    in_platform = {path.stem for path in (ROOT / "platform").iterdir() if path.suffix == ".py" or path.is_dir()}
    assert not (at_top | in_platform) & sys.stdlib_module_names


def test_ruff_checks_for_modules_shadowing_the_standard_library() -> None:
    ruff = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["ruff"]["lint"]
    assert "A" in ruff["select"] or "A005" in ruff["select"]
    assert "A005" not in ruff.get("ignore", [])
