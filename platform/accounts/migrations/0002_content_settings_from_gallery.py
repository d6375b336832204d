# A person's content settings (mature works) are the account's: the gallery's profile table moves here with its rows.

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

from common.table_adoption import TablesAdopted


class Migration(migrations.Migration):

    dependencies = [
        ('accounts', '0001_initial'),
        ('contenttypes', '0002_remove_content_type_name'),
        ('gallery', '0002_search_vector_index'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.CreateModel(
                name='ContentSettings',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('show_mature', models.BooleanField(default=False)),
                    ('adult_confirmed_at', models.DateTimeField(blank=True, null=True)),
                    ('user', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='content_settings', to=settings.AUTH_USER_MODEL)),
                ],
                options={
                    'verbose_name_plural': 'content settings',
                },
            ),
        ]),
        TablesAdopted(old_app='gallery', old_last_migration='0002_search_vector_index', model_names={'ContentSettings': 'Profile'}),
    ]
