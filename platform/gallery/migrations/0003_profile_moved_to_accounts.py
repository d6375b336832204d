# The profile's table now belongs to accounts.ContentSettings (accounts 0002 renamed it): only the state changes here.

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('gallery', '0002_search_vector_index'),
        ('accounts', '0002_content_settings_from_gallery'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.DeleteModel(
                name='Profile',
            ),
        ]),
    ]
