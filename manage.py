#!/usr/bin/env python
"""Django's command-line utility for Worldloom."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def main() -> None:
    # platform/ is a source root, not a package; appended (never inserted first) so it cannot shadow the stdlib.
    source_root = str(Path(__file__).resolve().parent / "platform")
    if source_root not in sys.path:
        sys.path.append(source_root)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
