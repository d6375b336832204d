# Stories and their beats are authored in worlds: the tables of the retired `stories` app move here with their rows.

import django.core.validators
import django.db.models.deletion
from django.db import migrations, models

from common.table_adoption import TablesAdopted


class Migration(migrations.Migration):

    dependencies = [
        ('contenttypes', '0002_remove_content_type_name'),
        ('worlds', '0008_reencoded_images'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.CreateModel(
                name='Story',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('title', models.CharField(max_length=120)),
                    ('opening_scene', models.TextField(blank=True, max_length=10000, validators=[django.core.validators.MaxLengthValidator(10000)])),
                    ('start_beat', models.CharField(max_length=200)),
                    ('twine_data', models.JSONField(blank=True, default=dict)),
                    ('characters', models.ManyToManyField(blank=True, related_name='stories', to='worlds.character')),
                    ('world', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='stories', to='worlds.world')),
                ],
                options={
                    'verbose_name_plural': 'stories',
                },
            ),
            migrations.CreateModel(
                name='Beat',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('name', models.CharField(max_length=200)),
                    ('scene', models.TextField(blank=True, max_length=10000, validators=[django.core.validators.MaxLengthValidator(10000)])),
                    ('goal', models.TextField(blank=True, max_length=2000, validators=[django.core.validators.MaxLengthValidator(2000)])),
                    ('choice_guidance', models.TextField(blank=True, max_length=2000, validators=[django.core.validators.MaxLengthValidator(2000)])),
                    ('choices', models.JSONField(blank=True, default=list)),
                    ('tags', models.JSONField(blank=True, default=list)),
                    ('twine_metadata', models.JSONField(blank=True, default=dict)),
                    ('order', models.PositiveIntegerField(default=0)),
                    ('story', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='beats', to='worlds.story')),
                ],
                options={
                    'ordering': ['order', 'id'],
                    'constraints': [models.UniqueConstraint(fields=('story', 'name'), name='beat_name_unique_per_story')],
                },
            ),
        ]),
        TablesAdopted(old_app='stories', old_last_migration='0007_inputs_deduplicated_per_browser', model_names={'Story': 'Story', 'Beat': 'Beat'}),
    ]
