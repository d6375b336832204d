"""The inference worker installs without the platform: `pip install worldloom` brings what it imports, no Django."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import PackageNotFoundError, packages_distributions, requires

from tests.fixtures import ROOT

PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def distribution_name(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def installed_closure(names: set[str]) -> set[str]:
    """The distributions `names` need, with what those need in turn (as installed here; extras left out)."""
    closure, waiting = set(), list(names)
    while waiting:
        name = waiting.pop()
        if name in closure:
            continue
        closure.add(name)
        try:
            needed = requires(name) or []
        except PackageNotFoundError:
            continue
        waiting += [distribution_name(item) for item in needed if "extra ==" not in item]
    return closure


def modules_the_worker_imports() -> set[str]:
    """Top-level modules imported anywhere in inference/ outside its tests."""
    modules = set()
    for path in (ROOT / "inference").rglob("*.py"):
        if "tests" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                modules |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                modules.add(node.module.split(".")[0])
    return modules - set(sys.stdlib_module_names) - {"inference", "__future__"}


def test_the_base_install_is_the_worker_s_and_holds_no_django() -> None:
    base = {distribution_name(requirement) for requirement in PROJECT["dependencies"]}
    assert not base & {"django", "channels", "daphne", "celery", "psycopg", "channels-redis"}
    closure = installed_closure(base)
    assert "django" not in closure
    by_module = packages_distributions()
    for module in modules_the_worker_imports():
        providers = {name.lower().replace("_", "-") for name in by_module.get(module, [])}
        assert providers & closure, f"inference imports {module!r}, which the base install does not bring"
