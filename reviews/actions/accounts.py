"""Reviewer accounts: the first-run setup, lifting a sign-in lockout, and
the changes an administrator makes to an account (staff status, active or
not), each audited as ``account.*`` with the acting superuser. Passwords are
never written to the log; these actions do not touch them."""

from __future__ import annotations

import ipaddress
import re

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser, AbstractUser
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import validate_email
from django.db import transaction

from .. import lockouts
from .. import setup_code as setup_codes
from ..errors import InvalidTransition, NotFound, ValidationFailed
from ..models import InboxView, ReviewerPreference, SubjectType
from ._common import Actor, SystemActor, audit, require_reviewer
from .spaces import claim_unowned_spaces


def is_loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def create_first_reviewer(
    *, username: str, password: str, email: str = "", remote_addr: str, setup_code: str
) -> AbstractBaseUser:
    """First-run setup: create the reviewer account. Only while no user exists,
    only from the machine itself (the site binds to 127.0.0.1), and only with
    the one-time code from VETTED_HOME/setup-code (reviews/setup_code.py),
    which is deleted once the account exists."""
    User = get_user_model()
    with transaction.atomic():
        if not is_loopback(remote_addr):
            raise InvalidTransition(
                "The first account can only be created from this machine (localhost); "
                "or run `python manage.py createsuperuser`."
            )
        if User.objects.exists():
            raise InvalidTransition("The reviewer account already exists; sign in instead.")
        username = (username or "").strip()
        errors: dict[str, str] = {}
        if not setup_codes.matches(setup_code):
            errors["code"] = (
                f"{'does not match' if setup_code else 'required'}: the one in {setup_codes.path()} "
                "(readable only by the account running Vetted); `manage.py serve` also printed "
                "this page's address with it"
            )
        if not username or not re.fullmatch(r"[\w.@+-]{1,150}", username):
            errors["username"] = "1-150 characters: letters, digits and @ . + - _"
        email = (email or "").strip()
        if email:
            try:
                validate_email(email)
            except DjangoValidationError:
                errors["email"] = "not a valid email address (or leave it empty)"
        candidate = User(username=username, email=email)
        try:
            validate_password(password or "", candidate)
        except DjangoValidationError as exc:
            errors["password"] = " ".join(exc.messages)
        if errors:
            raise ValidationFailed(errors)
        user = User.objects.create_superuser(username=username, email=email or "", password=password)
        audit(
            "user.created",
            actor=SystemActor("system:first-run"),
            subject=user,
            snippet=username,
            extra={"superuser": True, "remote_addr": remote_addr},
        )
        claim_unowned_spaces(user, actor=SystemActor("system:first-run"))
        transaction.on_commit(setup_codes.discard)
        return user


def clear_login_lockout(*, actor: Actor, username: str = "", address: str = "") -> int:
    """Lift a sign-in lockout (reviews/lockouts.py): forget every failed
    attempt recorded for ``username`` (from any address) or for ``address``
    (on any username). Reviewers only; writes one ``login.lockout_cleared``
    event (subject: the username, or "address:<ip>"). Returns the number of
    attempt rows removed; clearing what is not locked is allowed (0)."""
    from axes.models import AccessAttempt

    actor = require_reviewer(actor)
    username, address = (username or "").strip(), (address or "").strip()
    if bool(username) == bool(address):
        raise ValidationFailed({"lockout": "name exactly one: a username or an address"})
    # Spaces: another account's or an address's lockout is the
    # operator's to clear; the answer is the same whether it is locked or not.
    if not lockouts.may_clear(actor, username=username):
        raise InvalidTransition(
            "Only a superuser can clear another account's or an address's sign-in lockout; you may clear your own."
        )
    if address:
        try:
            address = str(ipaddress.ip_address(address))
        except ValueError:
            raise ValidationFailed({"address": f"{address[:60]!r} is not an IP address"}) from None
    with transaction.atomic():
        attempts = AccessAttempt.objects.filter(**({"username": username} if username else {"ip_address": address}))
        removed: int = attempts.delete()[0]
        audit(
            "login.lockout_cleared",
            actor=actor,
            subject=(SubjectType.USER, username or f"address:{address}"),
            snippet=f"cleared the sign-in lockout of {username or address}",
            extra={"username": username, "address": address, "attempts_removed": removed},
        )
    return removed


def _require_administrator(actor: Actor) -> AbstractUser:
    """Account changes are for an active staff superuser (a reviewer with every
    power), the same person who could make accounts with createsuperuser."""
    reviewer = require_reviewer(actor)
    if not isinstance(reviewer, AbstractUser) or not reviewer.is_superuser:
        raise InvalidTransition(f"User {reviewer.get_username()!r} is not a superuser and cannot change accounts.")
    return reviewer


def _locked_user(user: AbstractBaseUser | str) -> AbstractUser:
    User = get_user_model()
    username = user if isinstance(user, str) else user.get_username()
    try:
        return User.objects.select_for_update().get(**{User.USERNAME_FIELD: username})
    except User.DoesNotExist:
        raise NotFound(f"No user named {username!r}.") from None


def _change_account(
    account: AbstractBaseUser | str, *, actor: Actor, field: str, value: bool, event_type: str, refuse_self: str
) -> AbstractUser:
    with transaction.atomic():
        administrator = _require_administrator(actor)
        user = _locked_user(account)
        name = user.get_username()
        if user.pk == administrator.pk:
            raise InvalidTransition(f"You cannot {refuse_self} your own account ({name!r}); another superuser can.")
        if getattr(user, field) == value:
            state = {
                ("is_staff", True): "is already a staff account",
                ("is_staff", False): "is not a staff account; there is nothing to remove",
                ("is_active", True): "is already active",
                ("is_active", False): "is already inactive",
            }
            raise InvalidTransition(f"User {name!r} {state[field, value]}.")
        setattr(user, field, value)
        user.save(update_fields=[field])
        audit(event_type, actor=administrator, subject=user, snippet=name, extra={field: value})
        return user


def set_account_staff(user: AbstractBaseUser | str, *, actor: Actor, is_staff: bool) -> AbstractUser:
    """Make ``user`` a reviewer (staff: may sign in to the site and decide) or
    take that away. Only a superuser may, and not on their own account (so
    the last one cannot lock everyone out). Writes ``account.staff_granted``
    or ``account.staff_removed``."""
    return _change_account(
        user,
        actor=actor,
        field="is_staff",
        value=bool(is_staff),
        event_type="account.staff_granted" if is_staff else "account.staff_removed",
        refuse_self="change the staff status of",
    )


def deactivate_account(user: AbstractBaseUser | str, *, actor: Actor) -> AbstractUser:
    """``user`` can no longer sign in (their sessions stop working on the next
    request) nor decide anything; their history stays. Writes
    ``account.deactivated``."""
    return _change_account(
        user, actor=actor, field="is_active", value=False, event_type="account.deactivated", refuse_self="deactivate"
    )


def activate_account(user: AbstractBaseUser | str, *, actor: Actor) -> AbstractUser:
    """Undo ``deactivate_account`` (an imported user is created inactive, too).
    Writes ``account.activated``."""
    return _change_account(
        user, actor=actor, field="is_active", value=True, event_type="account.activated", refuse_self="activate"
    )


def set_inbox_view(actor: Actor, view: str) -> str:
    """Remember how ``actor`` (a reviewer) likes the inbox: ``cards`` or
    ``compact``. A preference, not memory, but still a write: audited as
    ``account.inbox_view`` when it changes (setting the same value writes
    nothing). Returns the view now stored."""
    if view not in InboxView.values:
        raise ValidationFailed({"view": f"{view!r} is not one of: {', '.join(InboxView.values)}"})
    with transaction.atomic():
        user = require_reviewer(actor)
        preference, _created = ReviewerPreference.objects.select_for_update().get_or_create(user=user)
        if preference.inbox_view != view:
            before = preference.inbox_view
            preference.inbox_view = view
            preference.save(update_fields=["inbox_view", "updated_at"])
            audit(
                "account.inbox_view",
                actor=user,
                subject=user,
                snippet=f"inbox view {before} → {view}",
                extra={"view": view, "was": before},
            )
    return view


def inbox_view_of(user: object) -> str:
    """The inbox view ``user`` chose (``cards`` until they choose). A read, kept beside its writer."""
    pk = getattr(user, "pk", None)
    if pk is None:
        return InboxView.CARDS
    stored = ReviewerPreference.objects.filter(user_id=pk).values_list("inbox_view", flat=True).first()
    return stored or InboxView.CARDS
