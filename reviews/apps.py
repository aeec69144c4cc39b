from django.apps import AppConfig
from django.conf import settings
from django.db.models.signals import post_migrate, post_save


def _ensure_audit_triggers(sender, using, **kwargs):
    """Re-create the append-only triggers after every migrate.

    SQLite's ALTER support is limited, so Django rebuilds a table (create new,
    copy, drop old, rename) for many schema changes, and dropping the old table
    drops its triggers. A later migration touching AuditEvent would otherwise
    silently make the write log editable again.
    """
    from django.db import connections

    from dbengine import database_engine
    from dbengine.audit_log import AUDIT_TABLE

    connection = connections[using]
    if AUDIT_TABLE not in connection.introspection.table_names():
        return
    database_engine(connection).ensure_audit_triggers(connection)


def _first_superuser_claims_spaces(sender, instance, created, **kwargs):
    """Spaces: a fresh install's spaces have no member until the
    first reviewer exists. The first-run page claims them; so does the first
    superuser made any other way (`createsuperuser`, the admin), through the
    same audited action. Spaces that already have members are left alone."""
    if not created or not instance.is_superuser:
        return
    from django.db import transaction

    from . import actions

    with transaction.atomic():
        actions.claim_unowned_spaces(instance, actor=actions.SystemActor("system:first-superuser"))


class ReviewsConfig(AppConfig):
    name = "reviews"
    verbose_name = "Records and reviews"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        post_migrate.connect(_ensure_audit_triggers, sender=self, dispatch_uid="reviews.audit_triggers")
        from . import lockouts  # noqa: F401 - connects the lockout log line

        post_save.connect(
            _first_superuser_claims_spaces, sender=settings.AUTH_USER_MODEL, dispatch_uid="reviews.first_superuser"
        )
