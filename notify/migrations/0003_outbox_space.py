from django.db import migrations


class Migration(migrations.Migration):
    """An outbox event's space is called ``space`` (it was ``scope``)."""

    dependencies = [("notify", "0002_outbox_space_slug")]

    operations = [migrations.RenameField(model_name="outboxevent", old_name="scope", new_name="space")]
