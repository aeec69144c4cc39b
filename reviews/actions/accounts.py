"""Reviewer accounts: the first-run setup."""

from __future__ import annotations

import ipaddress
import re

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import validate_email
from django.db import transaction

from ..errors import InvalidTransition, ValidationFailed
from ._common import SystemActor, _audit


def is_loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def create_first_reviewer(*, username: str, password: str, email: str = "", remote_addr: str):
    """First-run setup: create the reviewer account. Only while no user exists,
    and only from the machine itself (the site binds to 127.0.0.1)."""
    User = get_user_model()
    with transaction.atomic():
        if not is_loopback(remote_addr):
            raise InvalidTransition("The first account can only be created from this machine (localhost); "
                                    "or run `python manage.py createsuperuser`.")
        if User.objects.exists():
            raise InvalidTransition("The reviewer account already exists; sign in instead.")
        username = (username or "").strip()
        errors = {}
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
        return user
