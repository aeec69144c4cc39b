"""Reviewer accounts: the first-run setup, and lifting a sign-in lockout."""

from __future__ import annotations

import ipaddress
import re

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import validate_email
from django.db import transaction

from .. import setup_code as setup_codes
from ..errors import InvalidTransition, ValidationFailed
from ..models import SubjectType
from ._common import SystemActor, _audit, _require_reviewer


def is_loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def create_first_reviewer(*, username: str, password: str, email: str = "", remote_addr: str, setup_code: str):
    """First-run setup: create the reviewer account. Only while no user exists,
    only from the machine itself (the site binds to 127.0.0.1), and only with
    the one-time code from VETTED_HOME/setup-code (reviews/setup_code.py),
    which is deleted once the account exists."""
    User = get_user_model()
    with transaction.atomic():
        if not is_loopback(remote_addr):
            raise InvalidTransition("The first account can only be created from this machine (localhost); "
                                    "or run `python manage.py createsuperuser`.")
        if User.objects.exists():
            raise InvalidTransition("The reviewer account already exists; sign in instead.")
        username = (username or "").strip()
        errors = {}
        if not setup_codes.matches(setup_code):
            errors["code"] = (f"{'does not match' if setup_code else 'required'}: the one in {setup_codes.path()} "
                              "(readable only by the account running Vetted); `manage.py serve` also printed "
                              "this page's address with it")
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
        _audit("user.created", actor=SystemActor("system:first-run"), subject=user, snippet=username,
               extra={"superuser": True, "remote_addr": remote_addr})
        transaction.on_commit(setup_codes.discard)
        return user


def clear_login_lockout(*, actor, username: str = "", address: str = "") -> int:
    """Lift a sign-in lockout (reviews/lockouts.py): forget every failed
    attempt recorded for ``username`` (from any address) or for ``address``
    (on any username). Reviewers only; writes one ``login.lockout_cleared``
    event (subject: the username, or "address:<ip>"). Returns the number of
    attempt rows removed; clearing what is not locked is allowed (0)."""
    from axes.models import AccessAttempt

    actor = _require_reviewer(actor)
    username, address = (username or "").strip(), (address or "").strip()
    if bool(username) == bool(address):
        raise ValidationFailed({"lockout": "name exactly one: a username or an address"})
    if address:
        try:
            address = str(ipaddress.ip_address(address))
        except ValueError:
            raise ValidationFailed({"address": f"{address[:60]!r} is not an IP address"}) from None
    with transaction.atomic():
        attempts = AccessAttempt.objects.filter(**({"username": username} if username else {"ip_address": address}))
        removed, _ = attempts.delete()
        _audit("login.lockout_cleared", actor=actor, subject=(SubjectType.USER, username or f"address:{address}"),
               snippet=f"cleared the sign-in lockout of {username or address}",
               extra={"username": username, "address": address, "attempts_removed": removed})
    return removed
