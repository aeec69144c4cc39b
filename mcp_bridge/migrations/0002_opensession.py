from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("mcp_bridge", "0001_initial"),
    ]

    operations = [
        migrations.CreateModel(
            name="OpenSession",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("reservation", models.CharField(max_length=32, unique=True)),
                ("session_id", models.CharField(blank=True, db_index=True, max_length=64)),
                ("agent_id", models.BigIntegerField()),
                ("opened_at", models.FloatField(help_text="Wall-clock seconds (time.time()) it was opened.")),
                ("closed", models.BooleanField(default=False)),
            ],
            options={
                "indexes": [models.Index(fields=["agent_id", "closed", "opened_at"], name="opensession_agent")],
            },
        ),
    ]
