# Play sessions, their input log and snapshots, moved from the retired `stories` app with their rows.

import django.db.models.deletion
import uuid
from django.conf import settings
from django.db import migrations, models

from common.table_adoption import TablesAdopted


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('contenttypes', '0002_remove_content_type_name'),
        ('workers', '0002_workernode_token_expires_at'),
        ('worlds', '0009_stories_authored_in_worlds'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.CreateModel(
                name='PlaySession',
                fields=[
                    ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                    ('is_live', models.BooleanField(default=False)),
                    ('status', models.CharField(choices=[('queued', 'waiting for a worker'), ('running', 'running'), ('parked', 'parked'), ('ended', 'ended')], default='queued', max_length=8)),
                    ('engine', models.CharField(max_length=60)),
                    ('queued_at', models.DateTimeField(blank=True, null=True)),
                    ('last_frame', models.PositiveBigIntegerField(default=0)),
                    ('last_sequence', models.PositiveIntegerField(default=0)),
                    ('ended_reason', models.CharField(blank=True, max_length=300)),
                    ('created_at', models.DateTimeField(auto_now_add=True)),
                    ('last_active_at', models.DateTimeField(auto_now_add=True)),
                    ('owner', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='play_sessions', to=settings.AUTH_USER_MODEL)),
                    ('participants', models.ManyToManyField(blank=True, related_name='live_sessions', to=settings.AUTH_USER_MODEL)),
                    ('version', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='sessions', to='worlds.worldversion')),
                    ('worker', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='sessions', to='workers.workernode')),
                ],
            ),
            migrations.CreateModel(
                name='SessionEvent',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('sequence', models.PositiveIntegerField()),
                    ('browser', models.CharField(blank=True, default='', max_length=64)),
                    ('client_sequence', models.PositiveIntegerField(null=True)),
                    ('kind', models.CharField(max_length=20)),
                    ('payload', models.JSONField()),
                    ('applied_tick', models.PositiveBigIntegerField(null=True)),
                    ('applied_effects', models.JSONField(blank=True, default=dict)),
                    ('created_at', models.DateTimeField(auto_now_add=True)),
                    ('player', models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ('session', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='events', to='play.playsession')),
                ],
                options={
                    'ordering': ['sequence'],
                },
            ),
            migrations.CreateModel(
                name='SessionSnapshot',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('tick', models.PositiveBigIntegerField()),
                    ('sequence', models.PositiveIntegerField()),
                    ('engine_state', models.BinaryField()),
                    ('narrative', models.JSONField(default=dict)),
                    ('created_at', models.DateTimeField(auto_now_add=True)),
                    ('session', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='snapshots', to='play.playsession')),
                ],
                options={
                    'ordering': ['-tick', '-pk'],
                },
            ),
            migrations.AddIndex(
                model_name='playsession',
                index=models.Index(fields=['status', 'queued_at'], name='play_playse_status_2241fa_idx'),
            ),
            migrations.AddIndex(
                model_name='playsession',
                index=models.Index(fields=['worker', 'status'], name='play_playse_worker__65c84d_idx'),
            ),
            migrations.AddConstraint(
                model_name='sessionevent',
                constraint=models.UniqueConstraint(fields=('session', 'sequence'), name='event_sequence_unique_per_session'),
            ),
            migrations.AddConstraint(
                model_name='sessionevent',
                constraint=models.UniqueConstraint(fields=('session', 'player', 'browser', 'client_sequence'), name='client_sequence_unique_per_browser'),
            ),
        ]),
        TablesAdopted(old_app='stories', old_last_migration='0007_inputs_deduplicated_per_browser', model_names={'PlaySession': 'PlaySession', 'SessionEvent': 'SessionEvent', 'SessionSnapshot': 'SessionSnapshot'}, index_renames={'stories_pla_status_468b66_idx': 'play_playse_status_2241fa_idx', 'stories_pla_worker__6b53b0_idx': 'play_playse_worker__65c84d_idx'}),
    ]
