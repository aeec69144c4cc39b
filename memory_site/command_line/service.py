"""`vetted service install`: a user service file, so the daemon starts at
log-in and outlives every terminal (a systemd user unit on Linux, a launchd
agent on macOS). It runs `vetted serve` in the foreground under the service
manager, which restarts it if it fails, with this VETTED_HOME and this
Python. Standard library only: no Django start.

It writes one file and changes nothing else (enabling it is the person's
step, printed at the end). A different file already at that path is never
replaced without --force: it may be the person's own edit.
"""

from __future__ import annotations

import os
import plistlib
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from common.defaults import PROJECT_DIR
from common.files import write_atomic

from .daemon import ALREADY_RUNNING

UNIT_NAME = "vetted.service"
LAUNCHD_LABEL = "org.vetted.serve"
ENV_FILE = "vetted.env"  # in VETTED_HOME: settings the unit reads (kept out of the unit: they may be secrets)


class ServiceError(Exception):
    pass


@dataclass(frozen=True)
class Service:
    kind: str  # "systemd" or "launchd"
    path: Path
    text: str
    enable: list[str]  # the commands that switch it on, to print
    disable: str  # the command that switches it off


def default_kind() -> str:
    if sys.platform == "darwin":
        return "launchd"
    if sys.platform.startswith("linux"):
        return "systemd"
    raise ServiceError(f"No user service manager known on {sys.platform}; choose --systemd or --launchd.")


def serve_argv(host: str, port: int) -> list[str]:
    # This interpreter and the module, not the `vetted` script: a service has
    # no PATH of the person's shell, and this works before the script is installed.
    return [sys.executable, "-m", "memory_site.command_line", "serve", "--host", host, "--port", str(port)]


def _systemd_word(value: str) -> str:
    """One ExecStart word or Environment assignment as systemd reads it: "%"
    starts a specifier (doubled to mean itself); quoted when it holds spaces."""
    if any(ch in value for ch in '"\\\n'):
        raise ServiceError(f"{value!r} holds a quote, backslash or newline, which a unit file cannot carry safely.")
    value = value.replace("%", "%%")
    return f'"{value}"' if any(ch.isspace() for ch in value) else value


def systemd_unit(home: Path, host: str, port: int) -> str:
    argv = " ".join(_systemd_word(word) for word in serve_argv(host, port))
    return "\n".join(
        [
            "# Written by `vetted service install`; `vetted service install --force` rewrites it.",
            "[Unit]",
            f"Description=Vetted (memory for AI agents) for {_systemd_word(str(home))}",
            "After=network.target",
            "",
            "[Service]",
            "Type=simple",
            f"WorkingDirectory={_systemd_word(str(PROJECT_DIR))}",
            f"Environment={_systemd_word(f'VETTED_HOME={home}')}",
            "Environment=PYTHONUNBUFFERED=1",
            f"# More settings (VETTED_*), one NAME=value a line, in {ENV_FILE} (keep it private: chmod 600).",
            f"EnvironmentFile=-{_systemd_word(str(home / ENV_FILE))}",
            f"ExecStart={argv}",
            "Restart=on-failure",
            "RestartSec=5",
            "# 4: this VETTED_HOME's Vetted already serves that port (started elsewhere): not retried.",
            f"RestartPreventExitStatus={ALREADY_RUNNING}",
            "",
            "[Install]",
            "WantedBy=default.target",
            "",
        ]
    )


def launchd_plist(home: Path, host: str, port: int) -> str:
    log = str(home / "daemon.log")
    document = {
        "Label": LAUNCHD_LABEL,
        "ProgramArguments": serve_argv(host, port),
        "WorkingDirectory": str(PROJECT_DIR),
        "EnvironmentVariables": {"VETTED_HOME": str(home), "PYTHONUNBUFFERED": "1"},
        "RunAtLoad": True,
        "KeepAlive": {"SuccessfulExit": False},  # restart after a failure, not after `vetted stop`
        "StandardOutPath": log,
        "StandardErrorPath": log,
    }
    return plistlib.dumps(document).decode("utf-8")


def service(kind: str, home: Path, host: str, port: int) -> Service:
    home = home.expanduser().resolve()
    if kind == "systemd":
        config = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
        path = config / "systemd" / "user" / UNIT_NAME
        enable = [
            "systemctl --user daemon-reload",
            f"systemctl --user enable --now {UNIT_NAME}",
            "loginctl enable-linger $USER   # optional: keep it running after you log out",
        ]
        disable = f"systemctl --user disable --now {UNIT_NAME}"
        return Service(kind, path, systemd_unit(home, host, port), enable, disable)
    if kind == "launchd":
        path = Path.home() / "Library" / "LaunchAgents" / f"{LAUNCHD_LABEL}.plist"
        enable = [f"launchctl bootstrap gui/$(id -u) {shlex.quote(str(path))}"]
        disable = f"launchctl bootout gui/$(id -u) {shlex.quote(str(path))}"
        return Service(kind, path, launchd_plist(home, host, port), enable, disable)
    raise ServiceError(f"Unknown service manager {kind!r}; allowed: systemd, launchd.")


def install(wanted: Service, *, force: bool) -> str:
    """Write the file; returns what happened ("written", "unchanged",
    "replaced"). Raises ServiceError when a different file is there and
    force is off."""
    try:
        existing = wanted.path.read_text(encoding="utf-8")
    except FileNotFoundError:
        existing = None
    except OSError as exc:
        raise ServiceError(f"Cannot read {wanted.path}: {exc.strerror}.") from None
    if existing == wanted.text:
        return "unchanged"
    if existing is not None and not force:
        raise ServiceError(
            f"{wanted.path} already exists and differs from the service file Vetted would write "
            "(an edit of yours, or another VETTED_HOME, port or Python). Left as it is; "
            "`vetted service install --force` replaces it (`--print` shows the new text first)."
        )
    wanted.path.parent.mkdir(parents=True, exist_ok=True)
    try:
        # exclusive when there was none: a file that appears meanwhile is not replaced either
        write_atomic(wanted.path, wanted.text, mode=0o644, exclusive=existing is None)
    except FileExistsError:
        raise ServiceError(f"{wanted.path} appeared while writing; left as it is. Run this again.") from None
    return "written" if existing is None else "replaced"
