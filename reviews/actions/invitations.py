"""Invitations: an owner makes a one-time link for a new person to join a
space; the person opens it, chooses an account name and a password, and is
a member with the role the owner chose.

The link is a door that answers without credentials, so: the token is 32
random bytes and only its SHA-256 digest is stored; it works once, and only
until it expires or an owner revokes it; an unknown, used, revoked or
expired link all get the same answer
(``INVALID``), which names no space; the page rate-limits failed tries like
the sign-in (inbox/invitation_views.py). Both steps are audited.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model, password_validation
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from ..errors import InvalidTransition, NotFound, ValidationFailed
from ..invitation_models import Invitation
from ..models import SubjectType
from ..space_models import ROLES, Membership, Space, SpaceKind
from ._common import Actor, audit
from .spaces import locked_space, require_manager

# How long a link works: long enough to reach someone by mail over a weekend,
# short enough that a forgotten link does not stay a way in.
EXPIRES_HOURS = 72
INVALID = "This invitation link does not work: it is unknown, used or expired. Ask the space's owner for a new one."


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()


def create_invitation(space: Any, *, role: str, actor: Actor) -> tuple[Invitation, str]:
    """An owner (the policy's ``manage``) invites a new person to ``space``
    as ``role``. Returns the invitation and its token, which is not stored
    and cannot be shown again."""
    with transaction.atomic():
        space = locked_space(space)
        require_manager(actor, space)
        person: Any = actor
        if not isinstance(person, get_user_model()):
            # Someone must answer for who was let in: the operator adds existing accounts instead.
            raise InvalidTransition("An invitation is made by an owner of the space, on its page.")
        if role not in ROLES:
            raise ValidationFailed({"role": f"got {role!r}; one of {', '.join(ROLES)}"})
        if space.kind == SpaceKind.PERSONAL:
            raise InvalidTransition(f"{space.slug} is a personal space: its one member is its owner.")
        token = secrets.token_urlsafe(32)
        invitation = Invitation.objects.create(
            space=space,
            role=role,
            token_digest=_digest(token),
            created_by=person,
            expires_at=timezone.now() + timedelta(hours=EXPIRES_HOURS),
        )
        audit(
            "space.invited",
            actor=actor,
            subject=(SubjectType.SPACE, space.slug),
            snippet=role,
            extra={"invitation": invitation.pk, "role": role, "expires_at": invitation.expires_at.isoformat()},
        )
        return invitation, token


def open_invitation(token: str, *, lock: bool = False) -> Invitation:
    """The open invitation ``token`` opens, or NotFound(INVALID) (unknown,
    used and expired alike). The lookup is by digest; the digests are also
    compared in constant time, so nothing of a stored one leaks by timing."""
    token = str(token or "")
    if not token or len(token) > 100:
        raise NotFound(INVALID)
    digest = _digest(token)
    rows = Invitation.objects.select_related("space", "created_by")
    if lock:
        rows = rows.select_for_update(of=("self",))
    invitation = rows.filter(token_digest=digest).first()
    if invitation is None or not hmac.compare_digest(invitation.token_digest, digest) or not invitation.open:
        raise NotFound(INVALID)
    return invitation


def accept_invitation(token: str, *, username: str, password: str, password2: str) -> Any:
    """The invited person makes their account (a reviewer, i.e. staff,
    account: a reader too needs one to see anything) and becomes a member.
    One transaction: the invitation is used, the account and membership made,
    one audit event written."""
    with transaction.atomic():
        invitation = open_invitation(token, lock=True)
        user_model = get_user_model()
        username = str(username or "").strip()
        errors: dict[str, str] = {}
        probe = user_model(username=username)
        try:
            user_model._meta.get_field("username").run_validators(username)
            if not username:
                raise ValidationError("required")
        except ValidationError:
            errors["username"] = "1-150 letters, digits and @ . + - _"
        if "username" not in errors and user_model.objects.filter(username__iexact=username).exists():
            errors["username"] = f"{username!r} is taken; choose another"
        if password != password2:
            errors["password2"] = "the two passwords differ"
        else:
            try:
                password_validation.validate_password(password, probe)
            except ValidationError as exc:
                errors["password"] = " ".join(exc.messages)
        if errors:
            raise ValidationFailed(errors)
        user = user_model.objects.create_user(username=username, password=password, is_staff=True)
        Membership.objects.create(space=invitation.space, user=user, role=invitation.role)
        invitation.used_at = timezone.now()
        invitation.used_by = user
        invitation.save(update_fields=["used_at", "used_by"])
        audit(
            "space.member_added",
            actor=user,
            subject=(SubjectType.SPACE, invitation.space.slug),
            snippet=username,
            extra={
                "member": username,
                "role": invitation.role,
                "invitation": invitation.pk,
                "invited_by": invitation.created_by.get_username(),
                "account_created": True,
            },
        )
        return user


def open_invitations(space: Any, *, actor: Actor) -> list[Invitation]:
    """The links of ``space`` that still work (not used, revoked or expired),
    newest first, for an owner (the policy's ``manage``) to review."""
    slug = space if isinstance(space, str) else space.slug
    found = Space.objects.filter(slug=slug).first()
    if found is None:
        raise NotFound(f"No space {slug!r}.")
    require_manager(actor, found)
    space = found
    rows = Invitation.objects.filter(space=space, used_at=None, revoked_at=None, expires_at__gt=timezone.now())
    return list(rows.select_related("created_by"))


def revoke_invitation(space: Any, invitation_id: Any, *, actor: Actor) -> Invitation:
    """An owner takes back an open link before anyone used it: from then on it
    answers exactly like an unknown link. An invitation of another space, or
    one already used, revoked or expired, is NotFound (nothing to revoke)."""
    with transaction.atomic():
        space = locked_space(space)
        require_manager(actor, space)
        try:
            pk = int(str(invitation_id))
        except ValueError:
            raise NotFound(f"No open invitation {invitation_id!r} in {space.slug}.") from None
        invitation = Invitation.objects.select_for_update().filter(space=space, pk=pk).first()
        if invitation is None or not invitation.open:
            raise NotFound(f"No open invitation {pk} in {space.slug}: it was used, revoked or has expired.")
        person: Any = actor
        invitation.revoked_at = timezone.now()
        invitation.revoked_by = person if isinstance(person, get_user_model()) else None
        invitation.save(update_fields=["revoked_at", "revoked_by"])
        audit(
            "space.invitation_revoked",
            actor=actor,
            subject=(SubjectType.SPACE, space.slug),
            snippet=invitation.role,
            extra={
                "invitation": invitation.pk,
                "role": invitation.role,
                "invited_by": invitation.created_by.get_username(),
                "expires_at": invitation.expires_at.isoformat(),
            },
        )
        return invitation
