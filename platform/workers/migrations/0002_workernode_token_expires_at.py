"""Worker tokens expire. Tokens issued before this migration get the default lifetime from now, so workers
already deployed keep working until an operator rotates them."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db import migrations, models
from django.utils import timezone

# The lifetime at the time of writing (workers.services.TOKEN_LIFETIME); a migration must not follow later edits.
EXISTING_TOKEN_LIFETIME = timedelta(days=90)


def existing_tokens_expire_later(apps: Any, schema_editor: Any) -> None:
    apps.get_model("workers", "WorkerNode").objects.update(token_expires_at=timezone.now() + EXISTING_TOKEN_LIFETIME)


class Migration(migrations.Migration):
    dependencies = [("workers", "0001_initial")]

    operations = [
        migrations.AddField(model_name="workernode", name="token_expires_at", field=models.DateTimeField(null=True)),
        migrations.RunPython(existing_tokens_expire_later, migrations.RunPython.noop),
        migrations.AlterField(model_name="workernode", name="token_expires_at", field=models.DateTimeField()),
    ]
