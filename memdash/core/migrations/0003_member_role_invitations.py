"""The `member` role (triage and upload) and invitations. Viewers could triage and upload until
now and are read-only from here on, so every existing viewer becomes a member: nobody loses what
they could do. Back: members become viewers again."""

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


def viewers_become_members(apps, schema_editor):
    Membership = apps.get_model("core", "Membership")
    Membership.objects.filter(role="viewer").update(role="member")


def members_become_viewers(apps, schema_editor):
    Membership = apps.get_model("core", "Membership")
    Membership.objects.filter(role="member").update(role="viewer")


class Migration(migrations.Migration):

    dependencies = [
        ('core', '0002_lens_settings_moved'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AlterField(
            model_name='membership',
            name='role',
            field=models.CharField(choices=[('viewer', 'viewer'), ('member', 'member'), ('admin', 'admin')], max_length=16),
        ),
        migrations.RunPython(viewers_become_members, members_become_viewers),
        migrations.CreateModel(
            name='Invitation',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('username', models.CharField(max_length=150)),
                ('role', models.CharField(choices=[('viewer', 'viewer'), ('member', 'member'), ('admin', 'admin')], max_length=16)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('app', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='invitations', to='core.app')),
                ('invited_by', models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('app', 'username'), name='invitation_app_username')],
            },
        ),
    ]
