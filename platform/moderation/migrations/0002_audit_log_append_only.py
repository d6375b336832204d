"""The database itself refuses to change audit entries, so raw SQL and other clients cannot either.

Updates are refused on PostgreSQL and SQLite. Deletes are refused on PostgreSQL only: Django's test flush
empties SQLite tables with DELETE (PostgreSQL's uses TRUNCATE, which row triggers do not see), and SQLite is
the embedded, single-machine mode, where the model and queryset refusals guard the site.
"""

from django.db import migrations

POSTGRESQL_FUNCTION = """
CREATE OR REPLACE FUNCTION moderation_audit_entry_refuse_change() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'the audit log is append-only: entries are never changed or deleted';
END;
$$ LANGUAGE plpgsql
"""


def create_triggers(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(POSTGRESQL_FUNCTION)
        schema_editor.execute(
            "CREATE TRIGGER moderation_audit_entry_append_only BEFORE UPDATE OR DELETE ON moderation_auditentry "
            "FOR EACH ROW EXECUTE FUNCTION moderation_audit_entry_refuse_change()"
        )
    elif vendor == "sqlite":
        schema_editor.execute(
            "CREATE TRIGGER moderation_audit_entry_append_only BEFORE UPDATE ON moderation_auditentry "
            "BEGIN SELECT RAISE(ABORT, 'the audit log is append-only: entries are never changed or deleted'); END"
        )


def drop_triggers(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute("DROP TRIGGER IF EXISTS moderation_audit_entry_append_only ON moderation_auditentry")
        schema_editor.execute("DROP FUNCTION IF EXISTS moderation_audit_entry_refuse_change()")
    elif vendor == "sqlite":
        schema_editor.execute("DROP TRIGGER IF EXISTS moderation_audit_entry_append_only")


class Migration(migrations.Migration):
    dependencies = [("moderation", "0001_initial")]

    operations = [migrations.RunPython(create_triggers, drop_triggers)]
