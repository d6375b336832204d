"""A GIN index over the listings' search vectors, on PostgreSQL only.

Django's GinIndex would emit `USING gin` on SQLite too, which SQLite cannot parse; SQLite's ranked fallback
(gallery.selectors.listings_search) scans `search_text` instead, which suits the small embedded databases.
"""

from django.db import migrations


def create_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            "CREATE INDEX IF NOT EXISTS listing_search_vector ON gallery_listing USING gin (search_vector)"
        )


def drop_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("DROP INDEX IF EXISTS listing_search_vector")


class Migration(migrations.Migration):
    dependencies = [("gallery", "0001_initial")]

    operations = [migrations.RunPython(create_index, drop_index)]
