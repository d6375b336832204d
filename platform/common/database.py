"""A budget for one piece of database work: PostgreSQL cancels a statement that runs past it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import OperationalError, connection, transaction

# PostgreSQL's SQLSTATE for a statement cancelled by statement_timeout.
QUERY_CANCELED = "57014"


class StatementTimedOut(Exception):
    """A statement ran past its budget and PostgreSQL cancelled it; the transaction was rolled back."""


@contextmanager
def statement_timeout(*, milliseconds: int) -> Iterator[None]:
    """Run the block in a transaction whose statements may take at most `milliseconds` each on PostgreSQL
    (SET LOCAL ends with the transaction, so the connection's other work keeps no limit). SQLite has no such
    setting: there it is just a transaction."""
    try:
        with transaction.atomic():
            if connection.vendor == "postgresql":
                with connection.cursor() as cursor:
                    cursor.execute(f"SET LOCAL statement_timeout = {int(milliseconds)}")
            yield
    except OperationalError as error:
        if getattr(error.__cause__, "sqlstate", None) == QUERY_CANCELED:
            raise StatementTimedOut(f"cancelled after {milliseconds} ms") from error
        raise
