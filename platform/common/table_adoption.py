"""A migration operation that gives a model moved between apps the tables its old app left behind.

A model moved from one app to another keeps its rows: a database made by the old app has its tables renamed to
the new app's names (with the many-to-many tables and the named indexes); a new database gets them created. The
models' state comes from state-only CreateModel operations placed before this one.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations, models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import ProjectState


class TablesAdopted(migrations.operations.base.Operation):
    """Rename `<old_app>_<old model>` tables to the models' own tables where they exist, else create the tables."""

    reduces_to_sql = False
    reversible = False

    def __init__(
        self,
        *,
        old_app: str,
        old_last_migration: str,
        model_names: list[str],
        index_renames: dict[str, str] | None = None,
    ) -> None:
        self.old_app = old_app
        # The old app's tables are adopted as its last migration left them, and only so.
        self.old_last_migration = old_last_migration
        self.model_names = model_names
        # The indexes the old app named after its own tables (old name -> the name this app's state gives it).
        self.index_renames = index_renames or {}

    def deconstruct(self) -> tuple[str, list[Any], dict[str, Any]]:
        options = {
            "old_app": self.old_app,
            "old_last_migration": self.old_last_migration,
            "model_names": self.model_names,
            "index_renames": self.index_renames,
        }
        return self.__class__.__qualname__, [], options

    def state_forwards(self, app_label: str, state: ProjectState) -> None:
        pass

    def database_forwards(
        self, app_label: str, schema_editor: BaseDatabaseSchemaEditor, from_state: ProjectState, to_state: ProjectState
    ) -> None:
        existing = set(schema_editor.connection.introspection.table_names())
        if any(f"{self.old_app}_{old_name.lower()}" in existing for old_name in self.model_names.values()):
            self.old_schema_check(schema_editor)
        for name, old_name in self.model_names.items():
            model = to_state.apps.get_model(app_label, name)
            old_table = f"{self.old_app}_{old_name.lower()}"
            if old_table not in existing:
                schema_editor.create_model(model)
                continue
            schema_editor.alter_db_table(model, old_table, model._meta.db_table)
            for field in model._meta.local_many_to_many:
                through = field.remote_field.through
                schema_editor.alter_db_table(through, f"{old_table}_{field.name}", through._meta.db_table)
            for index in model._meta.indexes:
                old_index_name = next((old for old, new in self.index_renames.items() if new == index.name), None)
                if old_index_name is not None:
                    old_index = models.Index(fields=index.fields, name=old_index_name)
                    schema_editor.rename_index(model, old_index, index)
            if "django_content_type" in existing:
                # Permissions and admin history point at content types: they follow the model to its new app.
                schema_editor.execute(
                    "UPDATE django_content_type SET app_label = %s, model = %s WHERE app_label = %s AND model = %s",
                    [app_label, name.lower(), self.old_app, old_name.lower()],
                )

    def old_schema_check(self, schema_editor: BaseDatabaseSchemaEditor) -> None:
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(
                "SELECT 1 FROM django_migrations WHERE app = %s AND name = %s", [self.old_app, self.old_last_migration]
            )
            if cursor.fetchone() is None:
                raise RuntimeError(
                    f"the tables of {self.old_app!r} are older than its migration {self.old_last_migration}: "
                    "migrate with the release before this one first, then with this one"
                )

    def database_backwards(
        self, app_label: str, schema_editor: BaseDatabaseSchemaEditor, from_state: ProjectState, to_state: ProjectState
    ) -> None:
        raise NotImplementedError("tables adopted from a retired app are not given back")

    def describe(self) -> str:
        return (
            f"Adopt the tables of {', '.join(self.model_names)} from the retired app {self.old_app!r}, or create them"
        )
