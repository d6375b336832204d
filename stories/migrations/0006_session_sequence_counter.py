from django.db import migrations, models
from django.db.models import Max, OuterRef, Subquery
from django.db.models.functions import Coalesce


def last_sequence_from_log(apps, schema_editor):
    """Sessions already played continue their numbering after their newest logged input."""
    PlaySession = apps.get_model("stories", "PlaySession")
    SessionEvent = apps.get_model("stories", "SessionEvent")
    newest = SessionEvent.objects.filter(session=OuterRef("pk")).values("session").annotate(last=Max("sequence"))
    PlaySession.objects.update(last_sequence=Coalesce(Subquery(newest.values("last")), 0))


class Migration(migrations.Migration):
    dependencies = [
        ("stories", "0005_parked_sessions"),
    ]

    operations = [
        migrations.AddField(
            model_name="playsession",
            name="last_sequence",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.RunPython(last_sequence_from_log, migrations.RunPython.noop),
    ]
