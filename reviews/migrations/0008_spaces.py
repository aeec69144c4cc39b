"""Spaces: the fixed scopes become spaces with members.

- ``personal`` becomes the first reviewer's personal space, ``team`` a team
  space called ``team``, ``system`` the system space. Each keeps its old
  scope as its slug, so no record, proposal, agent grant, checksum, index
  partition or audit row changes (reviews/space_models.py says why).
- The first reviewer (the earliest active staff account; else the earliest
  superuser) owns all three. Every other active staff account, who could
  decide anything before, becomes a reviewer of ``team`` and ``system``: a
  personal space has exactly one member.
- Every agent gets an owner: the account named in its ``created_by`` if it
  exists, else the first reviewer ("import" and other system agents: none).
  A grant of a space its owner is not a member of is removed (it would let
  one person's agent read another's personal memory); the removal is
  audited (``agent.grants_narrowed``), as is each space made (``space.created``).
Only ORM operations, the same on SQLite and Postgres, but for one trigger
PostgreSQL needs dropped first (drop_index_trigger_on_postgres).
"""

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

MIGRATION_ACTOR = "migration 0008_spaces"


def make_spaces(apps, schema_editor):
    User = apps.get_model(*settings.AUTH_USER_MODEL.split("."))
    Space = apps.get_model("reviews", "Space")
    Membership = apps.get_model("reviews", "Membership")
    Agent = apps.get_model("reviews", "Agent")
    AuditEvent = apps.get_model("reviews", "AuditEvent")
    # The database being migrated (`migrate --database X`), not the default one.
    db = schema_editor.connection.alias
    staff = User.objects.using(db).filter(is_active=True, is_staff=True).order_by("date_joined", "pk")
    first = staff.first() or User.objects.using(db).filter(is_superuser=True).order_by("date_joined", "pk").first()

    # A fresh install (no account yet) gets its spaces silently, as it gets
    # its tables; an instance in use gets each change in its write log.
    in_use = User.objects.using(db).exists()

    def audit(event_type, subject_type, subject_id, extra):
        if not in_use:
            return
        AuditEvent.objects.using(db).create(
            event_type=event_type,
            actor_type="system",
            actor=MIGRATION_ACTOR,
            subject_type=subject_type,
            subject_id=subject_id,
            extra=extra,
        )

    owner_name = first.username if first is not None else ""
    spaces = {
        "personal": Space.objects.using(db).create(
            slug="personal", kind="personal", name=f"Personal ({owner_name})" if owner_name else "Personal"
        ),
        "team": Space.objects.using(db).create(slug="team", kind="team", name="Team"),
        "system": Space.objects.using(db).create(slug="system", kind="system", name="System"),
    }
    roles = {}
    if first is not None:
        for space in spaces.values():
            roles[(space.slug, first.pk)] = "owner"
        for user in staff.exclude(pk=first.pk):
            roles[("team", user.pk)] = "reviewer"
            roles[("system", user.pk)] = "reviewer"
    for (slug, user_pk), role in roles.items():
        Membership.objects.using(db).create(space=spaces[slug], user_id=user_pk, role=role)
    for slug, space in spaces.items():
        members = {str(User.objects.using(db).get(pk=pk).username): role for (s, pk), role in roles.items() if s == slug}
        audit("space.created", "space", slug, {"kind": space.kind, "members": members, "migrated_from_scope": slug})

    users = {user.username: user for user in User.objects.using(db).all()}
    for agent in Agent.objects.using(db).order_by("pk"):
        if agent.created_by == "system":
            continue  # a system agent (e.g. "import") belongs to no person
        owner = users.get(agent.created_by) or first
        if owner is None:
            continue
        agent.owner_id = owner.pk
        allowed = {slug for (slug, pk) in roles if pk == owner.pk}
        kept = [slug for slug in agent.scopes if slug in allowed]
        if kept != list(agent.scopes):
            removed = [slug for slug in agent.scopes if slug not in allowed]
            agent.scopes = kept
            audit("agent.grants_narrowed", "agent", agent.public_id, {"removed": removed, "owner": owner.username})
        agent.save(update_fields=["owner", "scopes"])


def drop_index_trigger_on_postgres(apps, schema_editor):
    """PostgreSQL refuses to change the type of a column a trigger names, and
    retrieval's retrieval_record_au watches ``scope``: drop it first, as
    SQLite's table rebuild does by itself. post_migrate makes it again
    (retrieval/apps.py), on both engines. Run again, in reverse, before
    the column is changed back."""
    from dbengine import database_engine

    database_engine(schema_editor.connection).before_column_change(schema_editor, "reviews_record", "retrieval_record_au")


class Migration(migrations.Migration):

    dependencies = [
        ('reviews', '0007_proposal_resubmits'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='Space',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('slug', models.CharField(max_length=64, unique=True)),
                ('kind', models.CharField(choices=[('personal', 'Personal'), ('team', 'Team'), ('system', 'System')], max_length=16)),
                ('name', models.CharField(max_length=100)),
                ('required_approvals', models.PositiveSmallIntegerField(default=1)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now, editable=False)),
            ],
            options={
                'ordering': ['slug'],
            },
        ),
        migrations.AddField(
            model_name='agent',
            name='owner',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='agents', to=settings.AUTH_USER_MODEL),
        ),
        migrations.AlterField(
            model_name='proposal',
            name='scope',
            field=models.CharField(blank=True, max_length=64),
        ),
        migrations.RunPython(drop_index_trigger_on_postgres, migrations.RunPython.noop),
        migrations.AlterField(
            model_name='record',
            name='scope',
            field=models.CharField(db_index=True, max_length=64),
        ),
        # Going back, the same trigger is dropped before the column shrinks again.
        migrations.RunPython(migrations.RunPython.noop, drop_index_trigger_on_postgres),
        migrations.CreateModel(
            name='Membership',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('role', models.CharField(choices=[('owner', 'Owner'), ('reviewer', 'Reviewer'), ('reader', 'Reader')], max_length=16)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now, editable=False)),
                ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='space_memberships', to=settings.AUTH_USER_MODEL)),
                ('space', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='memberships', to='reviews.space')),
            ],
            options={
                'ordering': ['space__slug', 'user__username'],
                'constraints': [models.UniqueConstraint(fields=('space', 'user'), name='membership_once_per_space')],
            },
        ),
        migrations.CreateModel(
            name='ProposalApproval',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('content_checksum', models.CharField(max_length=64)),
                ('note', models.TextField(blank=True)),
                ('at', models.DateTimeField(default=django.utils.timezone.now)),
                ('proposal', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='approvals', to='reviews.proposal')),
                ('user', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'ordering': ['at', 'id'],
            },
        ),
        # Choices only: no SQL, so the append-only triggers of 0002 stay.
        migrations.AlterField(
            model_name='auditevent',
            name='subject_type',
            field=models.CharField(choices=[('record', 'Record'), ('proposal', 'Proposal'), ('agent', 'Agent'), ('user', 'User'), ('space', 'Space')], max_length=16),
        ),
        migrations.RunPython(make_spaces, migrations.RunPython.noop),
    ]
