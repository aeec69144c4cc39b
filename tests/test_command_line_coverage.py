"""`vetted` covers every command a person types; a command's help is kept
so `--help` needs no Django start, and never shown stale; `vetted service
install` writes a user service file and never replaces someone else's."""

from __future__ import annotations

import io
import json
import plistlib
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from django.apps import apps
from django.core.management import get_commands

from common.defaults import PROJECT_DIR
from memory_site.command_line import app, daemon, helptext, run, service, table


def vetted(*args: str):
    return CliRunner().invoke(app.cli, list(args), prog_name="vetted", catch_exceptions=False)


def project_commands() -> dict[str, str]:
    """Management commands of the apps in this repository (not Django's or a library's, even when the
    virtual environment lives inside the checkout, as `make` puts it in `.venv/`)."""

    def in_repository(path: Path) -> bool:
        return path.is_relative_to(PROJECT_DIR) and "site-packages" not in path.parts

    ours = {c.name for c in apps.get_app_configs() if in_repository(Path(c.path).resolve())}
    return {name: app_name for name, app_name in get_commands().items() if app_name in ours}


def test_every_user_command_of_the_project_s_apps_is_a_vetted_command():
    handed_over = {target.command for _, target in table.handovers()}
    missing = sorted(set(project_commands()) - handed_over - set(table.NOT_VETTED))
    assert not missing, (
        f"{missing}: give each a `vetted` name in memory_site/command_line/table.py, or list it in "
        "table.NOT_VETTED with the reason it is not a person's command"
    )


def test_the_list_of_commands_left_out_names_only_real_commands_each_with_a_reason():
    assert set(table.NOT_VETTED) <= set(project_commands())
    assert not set(table.NOT_VETTED) & {target.command for _, target in table.handovers()}
    assert all(len(reason) > 20 for reason in table.NOT_VETTED.values())


@pytest.mark.parametrize(
    "words,command",
    [
        (["instructions", "import"], "import_instructions"),
        (["instructions", "publish"], "publish"),
        (["vault"], "vault"),
    ],
)
def test_instruction_files_and_the_vault_are_vetted_commands(words, command, capsys):
    assert dict((tuple(w), t.command) for w, t in table.handovers())[tuple(words)] == command
    with pytest.raises(SystemExit) as exited:
        run.run_command(command, " ".join(["vetted", *words]), ["--help"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: vetted {' '.join(words)} ")


# --------------------------------------------------------------------------- kept help


def test_the_kept_help_is_what_the_parsers_print_now():
    """The same check as the docs' --check (which runs in a clean process), here in the test process."""
    assert json.loads(helptext.render()) == json.loads(helptext.HELP_FILE.read_text(encoding="utf-8")), (
        "Run `python -m memory_site.docs_reference --write` and commit memory_site/command_line/help.json"
    )


def test_a_command_s_help_is_printed_from_the_kept_text_without_django(monkeypatch):
    monkeypatch.setattr(run, "run_command", lambda *a, **k: pytest.fail("--help started the command"))
    kept = json.loads(helptext.HELP_FILE.read_text(encoding="utf-8"))
    result = vetted("review", "accept", "--help")
    assert result.exit_code == 0 and result.output == kept["review accept"]["help"]
    assert result.output.startswith("usage: vetted review accept ")


def test_help_for_an_edited_command_comes_from_its_parser_not_the_kept_text(monkeypatch):
    assert helptext.kept(["agent", "create"], ["--help"]) is not None
    monkeypatch.setattr(helptext, "_source_digest", lambda module: "edited since")
    assert helptext.kept(["agent", "create"], ["--help"]) is None
    with pytest.raises(SystemExit) as exited:  # so the parser answers
        app.cli.main(["agent", "create", "--help"], prog_name="vetted")
    assert exited.value.code == 0


@pytest.mark.parametrize(
    "words,args",
    [
        (["review"], ["accept", "p_123", "--help"]),  # an argument before --help: the parser decides
        (["review"], ["--json", "--help"]),
        (["agent", "create"], ["bot"]),
        (["agent", "create"], []),
        (["nothing", "here"], ["--help"]),
    ],
)
def test_only_a_plain_help_request_is_answered_from_the_kept_text(words, args):
    assert helptext.kept(words, args) is None


# --------------------------------------------------------------------------- service install


@pytest.fixture
def places(tmp_path, monkeypatch):
    home = tmp_path / "my vetted 100%"  # a space and a % (a systemd specifier) in the path
    monkeypatch.setenv("VETTED_HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    return tmp_path, home


def unit_lines(text: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for line in text.splitlines():
        if "=" in line and not line.startswith("#"):
            key, _, value = line.partition("=")
            found.setdefault(key, []).append(value)
    return found


def test_the_systemd_unit_runs_this_python_s_serve_for_this_home(places):
    tmp_path, home = places
    result = vetted("service", "install", "--systemd", "--port", "8801")
    assert result.exit_code == 0, result.output
    path = tmp_path / "config" / "systemd" / "user" / "vetted.service"
    assert f"Wrote the systemd service file {path}." in result.output
    assert "systemctl --user enable --now vetted.service" in result.output
    lines = unit_lines(path.read_text())
    quoted_home = f'"{str(home).replace("%", "%%")}"'
    assert lines["ExecStart"] == [f"{sys.executable} -m memory_site.command_line serve --host 127.0.0.1 --port 8801"]
    assert lines["Environment"] == [f'"VETTED_HOME={str(home).replace("%", "%%")}"', "PYTHONUNBUFFERED=1"]
    assert lines["EnvironmentFile"] == [f'-"{str(home / "vetted.env").replace("%", "%%")}"']
    assert lines["WorkingDirectory"] == [str(PROJECT_DIR)]
    assert lines["Restart"] == ["on-failure"] and lines["WantedBy"] == ["default.target"]
    assert lines["RestartPreventExitStatus"] == [str(daemon.ALREADY_RUNNING)]
    assert quoted_home in lines["Description"][0]


def test_the_launchd_agent_runs_this_python_s_serve_for_this_home(places):
    tmp_path, home = places
    result = vetted("service", "install", "--launchd")
    assert result.exit_code == 0, result.output
    path = tmp_path / "user" / "Library" / "LaunchAgents" / "org.vetted.serve.plist"
    plist = plistlib.loads(path.read_bytes())
    assert plist["ProgramArguments"] == [
        sys.executable,
        *["-m", "memory_site.command_line", "serve", "--host", "127.0.0.1", "--port", "8765"],
    ]
    assert plist["EnvironmentVariables"]["VETTED_HOME"] == str(home)
    assert plist["WorkingDirectory"] == str(PROJECT_DIR) and plist["RunAtLoad"] is True
    assert plist["StandardErrorPath"] == str(home / "daemon.log")
    assert "launchctl bootstrap gui/$(id -u)" in result.output


def test_a_different_service_file_is_left_alone_without_force(places):
    tmp_path, _home = places
    assert vetted("service", "install", "--systemd").exit_code == 0
    path = tmp_path / "config" / "systemd" / "user" / "vetted.service"
    again = vetted("service", "install", "--systemd")
    assert again.exit_code == 0 and "nothing changed" in again.output

    path.write_text("[Service]\nExecStart=/my/own/serve\n")
    refused = vetted("service", "install", "--systemd", "--port", "9001")
    assert refused.exit_code == 1
    assert f"{path} already exists and differs" in refused.output and "--force" in refused.output
    assert path.read_text() == "[Service]\nExecStart=/my/own/serve\n"

    shown = vetted("service", "install", "--systemd", "--port", "9001", "--print")
    assert "--port 9001" in shown.output and path.read_text() == "[Service]\nExecStart=/my/own/serve\n"

    forced = vetted("service", "install", "--systemd", "--port", "9001", "--force")
    assert forced.exit_code == 0 and f"Replaced the systemd service file {path}." in forced.output
    assert "--port 9001" in path.read_text()


def test_a_path_a_unit_file_cannot_carry_is_refused_by_name(tmp_path):
    with pytest.raises(service.ServiceError, match="quote, backslash or newline"):
        service.systemd_unit(tmp_path / 'say "hi"', "127.0.0.1", 8765)


# --------------------------------------------------------------------------- the stdio entry


class FakeDist:
    def __init__(self, direct_url: str | None, located: Path):
        self.direct_url, self.located = direct_url, located

    def read_text(self, name: str) -> str | None:
        return self.direct_url if name == "direct_url.json" else None

    def locate_file(self, name: str) -> Path:
        return self.located / name


@pytest.fixture
def fake_python(tmp_path, monkeypatch):
    from common import clients

    (tmp_path / "bin").mkdir()
    monkeypatch.setattr(sys, "executable", str(tmp_path / "bin" / "python"))
    script = tmp_path / "bin" / "vetted-mcp"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    return clients, script


def test_the_stdio_entry_runs_the_installed_vetted_mcp_script_of_this_code(fake_python, monkeypatch):
    from importlib import metadata

    clients, script = fake_python
    editable_here = json.dumps({"dir_info": {"editable": True}, "url": f"file://{PROJECT_DIR}"})
    monkeypatch.setattr(metadata, "distribution", lambda name: FakeDist(editable_here, Path("/nowhere")))
    assert clients.stdio_command() == [str(script)]
    monkeypatch.setattr(metadata, "distribution", lambda name: FakeDist(None, PROJECT_DIR))  # a plain install
    assert clients.stdio_command() == [str(script)]


def test_the_stdio_entry_falls_back_to_manage_py_when_the_script_is_another_checkout_s(fake_python, monkeypatch):
    from importlib import metadata

    clients, script = fake_python
    elsewhere = json.dumps({"dir_info": {"editable": True}, "url": "file:///some/other/checkout"})
    monkeypatch.setattr(metadata, "distribution", lambda name: FakeDist(elsewhere, Path("/nowhere")))
    assert clients.stdio_command() == [sys.executable, str(PROJECT_DIR / "manage.py"), "mcp_stdio"]
    monkeypatch.setattr(metadata, "distribution", lambda name: FakeDist(None, PROJECT_DIR))
    script.unlink()  # not installed
    assert clients.stdio_command() == [sys.executable, str(PROJECT_DIR / "manage.py"), "mcp_stdio"]


@pytest.mark.django_db(transaction=True)
def test_a_command_prints_no_info_log_lines_but_the_person_can_ask_for_them(reviewer, capsys, monkeypatch):
    import logging

    monkeypatch.delenv("VETTED_LOG_LEVEL", raising=False)
    levels = {name: logging.getLogger(name).level for name in ("reviews", "retrieval", "axes")}
    logging.getLogger("reviews").setLevel(logging.INFO)  # as the settings leave it outside the tests
    try:
        with pytest.raises(SystemExit):
            app.cli.main(["agent", "create", "quiet-bot", "--spaces", "team"], prog_name="vetted")
        assert logging.getLogger("reviews").level == logging.WARNING

        logging.getLogger("reviews").setLevel(logging.INFO)
        monkeypatch.setenv("VETTED_LOG_LEVEL", "INFO")
        with pytest.raises(SystemExit):
            app.cli.main(["agent", "revoke", "quiet-bot"], prog_name="vetted")
        assert logging.getLogger("reviews").level == logging.INFO
    finally:
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)


# --------------------------------------------------------------------------- progress on a terminal


class Pipe(io.StringIO):
    def close(self) -> None:  # a command's output wrapper may close it; later writes still land
        pass


class Terminal(Pipe):
    def isatty(self) -> bool:
        return True


@pytest.mark.sqlite_only  # backup copies the SQLite file; on PostgreSQL it names pg_dump instead
@pytest.mark.django_db(transaction=True)
def test_a_backup_shows_its_steps_on_a_terminal_and_nothing_in_a_pipe(reviewer, tmp_path, monkeypatch):
    shown = {}
    for name, stream in (("terminal", Terminal()), ("pipe", Pipe())):
        with monkeypatch.context() as patch:  # sys.stderr back before the database's teardown writes
            patch.setattr(sys, "stderr", stream)
            with pytest.raises(SystemExit) as exited:
                app.cli.main(["data", "backup", str(tmp_path / f"{name}.sqlite3")], prog_name="vetted")
        assert exited.value.code == 0
        shown[name] = stream.getvalue()
    assert "backup: " in shown["terminal"] and "/3 " in shown["terminal"], shown
    assert "backup:" not in shown["pipe"]
