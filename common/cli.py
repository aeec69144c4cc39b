"""Helpers shared by the management commands (the terminal reviewer)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import date

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError

from common import textsafety


def resolve_reviewer(username: str | None):
    """The person a command acts as: --reviewer, else $VETTED_REVIEWER, else
    the only active superuser. Decisions are always attributed to a person."""
    User = get_user_model()
    username = username or os.environ.get("VETTED_REVIEWER") or None
    if username:
        try:
            user = User.objects.get(username=username)
        except User.DoesNotExist:
            raise CommandError(
                f"No user named {username!r}. Create one with `vetted manage createsuperuser`."
            ) from None
        if not user.is_active:
            raise CommandError(f"User {username!r} is inactive.")
        if not user.is_staff:
            raise CommandError(
                f"User {username!r} is not a reviewer (staff) account, so it cannot decide; make it "
                f"one (`vetted review account staff {username} --on`, or the admin's Users page) or "
                "choose another with --reviewer."
            )
        return user
    candidates = list(User.objects.filter(is_active=True, is_superuser=True)[:2])
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        raise CommandError(
            "No reviewer account exists yet. Create one first: open the site once "
            "(it asks for the account) or run `vetted manage createsuperuser`."
        )
    raise CommandError("Several reviewer accounts exist; say which one acts: --reviewer USERNAME (or VETTED_REVIEWER).")


def iso_date(value: str) -> date:
    """argparse type for YYYY-MM-DD. ArgumentTypeError, not CommandError:
    argparse turns it into a usage error, while a CommandError raised during
    parsing escapes as a traceback."""
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a date; use YYYY-MM-DD") from None


def dumps(data) -> str:
    """JSON for the terminal. Characters a reviewer cannot see are written as
    JSON escapes (\\u200b), so the terminal shows them and the value parses
    back unchanged."""
    text = json.dumps(data, ensure_ascii=False, sort_keys=False, default=str)
    return textsafety.replace_invisible(text, lambda ch: json.dumps(ch)[1:-1])


class Stages:
    """The steps of a long job shown on a terminal, one line: "backup: 2/3
    checking the copy [00:04]" (nothing when the output is not a terminal).
    Call it with each step's name as the step begins; close() when done.
    For work that is one step the database does at once (a backup copy),
    where a count of rows or pages cannot be had."""

    def __init__(self, desc: str, steps: int):
        from tqdm import tqdm

        self.bar = tqdm(
            total=steps,
            desc=desc,
            file=sys.stderr,
            disable=None,
            leave=False,
            bar_format="{desc}: {n_fmt}/{total_fmt} {postfix} [{elapsed}]",
        )
        self.begun = False

    def __call__(self, step: str) -> None:
        if self.begun:
            self.bar.update(1)
        self.begun = True
        self.bar.set_postfix_str(step)

    def close(self) -> None:
        self.bar.close()


def progress_bar(total: int, desc: str, unit: str):
    """A tqdm bar on standard error, off when it is not a terminal."""
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit=unit, unit_scale=True, file=sys.stderr, disable=None, leave=False)
