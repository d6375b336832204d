"""The README documents every environment variable the settings read (datasette's test_docs does this)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SETTINGS = ROOT / "platform" / "config" / "settings.py"

# env.str("NAME"…), env.bool("NAME"…), env("NAME"…)
ENV_READ = re.compile(r"""\benv(?:\.\w+)?\(\s*["']([A-Z][A-Z0-9_]+)["']""")


def variables_read_by_settings() -> set[str]:
    return set(ENV_READ.findall(SETTINGS.read_text()))


def variables_in_readme_table() -> set[str]:
    return set(re.findall(r"^\| `([A-Z][A-Z0-9_]+)` \|", (ROOT / "README.md").read_text(), re.MULTILINE))


def test_settings_read_the_variables_we_expect() -> None:
    assert {"DATABASE_URL", "REDIS_URL", "SECRET_KEY", "DEBUG", "ALLOWED_HOSTS"} <= variables_read_by_settings()


def test_every_environment_variable_is_in_the_readme_table() -> None:
    missing = variables_read_by_settings() - variables_in_readme_table()
    assert not missing, f"add these to the README's environment table: {sorted(missing)}"


def test_the_readme_table_lists_no_variable_the_settings_do_not_read() -> None:
    stale = variables_in_readme_table() - variables_read_by_settings()
    assert not stale, f"the README documents variables nothing reads: {sorted(stale)}"
