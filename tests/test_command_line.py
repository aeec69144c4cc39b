"""`vetted`, the one command line: its groups and help, the hand-over to the
management commands (in process, through click's runner), serve's refusal
before Django loads, status and stop. The real process (start-up imports,
serve --background) is in tests/test_command_line_process.py."""

from __future__ import annotations

import json
import os
import re

import pytest
from click.testing import CliRunner

from common import listening
from memory_site.command_line import app, daemon, run, table
from reviews import actions
from reviews.errors import Unauthorized
from reviews.models import Agent, Proposal, RecordStatus
from tests.conftest import content

DEAD_PID = 2**31 - 2  # above any pid_max: never a live process


def vetted(*args: str):
    return CliRunner().invoke(app.cli, list(args), prog_name="vetted", catch_exceptions=False)


def leaves(group: table.Group, prefix: tuple[str, ...]):
    for name, member in group[1].items():
        if isinstance(member, table.Target):
            yield (*prefix, name), member
        else:
            yield from leaves(member, (*prefix, name))


ALL_HANDOVERS = [((name,), target) for name, target in table.COMMANDS.items()] + [
    leaf for name, group in table.GROUPS.items() for leaf in leaves(group, (name,))
]


def test_help_lists_every_group_and_command_under_what_a_person_wants_to_do():
    result = vetted("--help")
    assert result.exit_code == 0
    for title, names in table.SECTIONS:
        assert f"{title}:" in result.output
        for name in names:
            assert re.search(rf"^  {re.escape(name)}\s", result.output, re.M), name
    # The sections name every command the tool has, and nothing it lacks.
    assert {name for _, names in table.SECTIONS for name in names} == set(app.cli.commands)
    assert "bench" not in result.output


@pytest.mark.parametrize("group", sorted(table.GROUPS))
def test_each_group_s_help_lists_its_commands(group):
    result = vetted(group, "--help")
    assert result.exit_code == 0
    assert result.output.startswith(f"Usage: vetted {group} ")
    for name in table.GROUPS[group][1]:
        assert re.search(rf"^  {re.escape(name)}\s", result.output, re.M), name


@pytest.mark.parametrize("words,target", ALL_HANDOVERS, ids=[" ".join(w) for w, _ in ALL_HANDOVERS])
def test_each_command_s_help_is_its_management_command_s_under_the_vetted_name(words, target):
    with pytest.raises(SystemExit) as exited:
        # argparse answers --help and exits 0; the runner would hide the exit code.
        run.run_command(target.command, " ".join(["vetted", *words]), ["--help"])
    assert exited.value.code == 0


def test_a_command_s_help_names_it_as_typed(capsys):
    with pytest.raises(SystemExit):
        run.run_command("create_agent", "vetted agent create", ["--help"])
    out = capsys.readouterr().out
    assert out.startswith("usage: vetted agent create ") and "--spaces" in out


@pytest.mark.parametrize("command", ["serve", "status", "stop", "completion"])
def test_the_tool_s_own_commands_answer_help(command):
    result = vetted(command, "--help")
    assert result.exit_code == 0 and result.output.startswith(f"Usage: vetted {command}")


def test_completion_prints_a_script_for_the_shell():
    # zsh: click asks bash for its version (a process) before writing bash's.
    result = vetted("completion", "zsh")
    assert result.exit_code == 0 and "_VETTED_COMPLETE=zsh_complete" in result.output
    assert vetted("completion", "tcsh").exit_code == 2


@pytest.mark.django_db(transaction=True)
def test_agent_create_then_a_proposal_shows_in_review_list_and_accept_approves_it(reviewer, capsys):
    """A round trip through the command line, as a person runs it: the token
    printed works, the agent's proposal is listed, accepting it makes a record."""
    with pytest.raises(SystemExit) as exited:
        app.cli.main(["agent", "create", "cli-bot", "--spaces", "team"], prog_name="vetted")
    assert exited.value.code == 0
    token = capsys.readouterr().out.strip().splitlines()[-1]
    agent = actions.agent_for_token(token)
    assert agent.name == "cli-bot"

    proposal = actions.propose_create(agent=agent, reason="Seen in the README", **content(title="From the CLI"))
    with pytest.raises(SystemExit) as exited:
        app.cli.main(["review", "list", "--json"], prog_name="vetted")
    assert exited.value.code == 0
    listed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [row["id"] for row in listed] == [proposal.public_id]

    with pytest.raises(SystemExit) as exited:
        app.cli.main(["review", "accept", proposal.public_id], prog_name="vetted")
    assert exited.value.code == 0
    proposal = Proposal.objects.get(pk=proposal.pk)
    assert proposal.result_record is not None and proposal.result_record.status == RecordStatus.APPROVED
    capsys.readouterr()

    with pytest.raises(SystemExit):
        app.cli.main(["agent", "list", "--json"], prog_name="vetted")
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(row["name"], row["active"]) for row in rows] == [("cli-bot", True)]
    assert all(token not in json.dumps(row) for row in rows)


@pytest.mark.django_db(transaction=True)
def test_agent_rotate_prints_a_new_token_and_the_old_one_stops_working(reviewer, capsys):
    _agent, old = actions.create_agent("rotating", spaces=["team"], actor=reviewer)
    with pytest.raises(SystemExit) as exited:
        app.cli.main(["agent", "rotate", "rotating"], prog_name="vetted")
    assert exited.value.code == 0
    captured = capsys.readouterr()
    new = captured.out.strip().splitlines()[-1]
    assert new != old and actions.agent_for_token(new).name == "rotating"
    assert "old one no longer works" in captured.err
    with pytest.raises(Unauthorized):
        actions.agent_for_token(old)
    assert Agent.objects.get(name="rotating").is_active


@pytest.mark.django_db(transaction=True)
def test_a_command_s_error_is_its_message_and_exit_1(reviewer, capsys):
    with pytest.raises(SystemExit) as exited:
        app.cli.main(["agent", "revoke", "nobody-here"], prog_name="vetted")
    assert exited.value.code == 1
    err = capsys.readouterr().err
    assert "nobody-here" in err and "Traceback" not in err


def test_a_terminal_command_runs_the_checks_but_not_the_web_side_s(monkeypatch):
    """The web side's checks import the URL configuration and every template
    tag library (DRF, the inbox, the search engine); `serve` runs them."""
    seen = {}

    def run_from_argv(self, argv):
        seen["checks"] = self.requires_system_checks

    from django.core.management.base import BaseCommand

    monkeypatch.setattr(BaseCommand, "run_from_argv", run_from_argv)
    run.run_command("review", "vetted review", ["list"])
    assert seen["checks"] and not set(seen["checks"]) & run.WEB_CHECK_TAGS
    assert {"models", "security", "database"} <= set(seen["checks"])
    run.run_command("serve", "vetted serve", [], all_checks=True)
    assert seen["checks"] == "__all__"


# --------------------------------------------------------------------------- serve, status, stop


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("VETTED_HOME", str(tmp_path))
    return tmp_path


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_serve_says_at_once_that_vetted_runs_before_migrating_or_loading_django(home, monkeypatch):
    port = free_port()
    (home / "serve.json").write_text(
        json.dumps({"host": "127.0.0.1", "port": port, "pid": os.getppid(), "state": "listening", "started": 0})
    )
    monkeypatch.setattr(run, "setup", lambda: pytest.fail("serve set Django up before refusing"))
    result = CliRunner().invoke(app.cli, ["serve", "--port", str(port)], prog_name="vetted")
    assert result.exit_code == daemon.ALREADY_RUNNING  # `make run` takes this code as done
    assert f"Vetted is already running for {home}: http://127.0.0.1:{port}/ (pid {os.getppid()}" in result.output
    assert "vetted stop" in result.output


def test_status_says_not_running_with_exit_3_and_how_to_start(home):
    result = vetted("status")
    assert result.exit_code == 3
    assert f"Vetted is not running for {home}" in result.output and "vetted serve" in result.output


def test_status_names_where_a_running_daemon_listens(home):
    port = free_port()
    listening.write(home, host="127.0.0.1", port=port, state="starting")
    result = vetted("status")
    assert result.exit_code == 0
    assert f"Vetted is starting at http://127.0.0.1:{port}/ (pid {os.getpid()}" in result.output


def test_stop_with_nothing_running_says_so_and_succeeds(home):
    (home / "serve.json").write_text(json.dumps({"host": "127.0.0.1", "port": 9, "pid": DEAD_PID}))
    (home / daemon.PID_FILE).write_text(f"{DEAD_PID}\n")
    result = vetted("stop")
    assert result.exit_code == 0 and "not running" in result.output
    assert not (home / daemon.PID_FILE).exists()


def test_a_pid_file_naming_another_program_is_not_stopped(home):
    (home / daemon.PID_FILE).write_text(f"{os.getpid()}\n")  # this pytest: not a Vetted daemon
    assert daemon.launched_pid(home) is None


def completions(args: list[str], incomplete: str) -> list[str]:
    from click.shell_completion import ShellComplete

    completer = ShellComplete(app.cli, {}, "vetted", "_VETTED_COMPLETE")
    return [item.value for item in completer.get_completions(args, incomplete)]


def test_completion_offers_groups_commands_and_the_handed_over_subcommands():
    assert completions([], "da") == ["data"]
    assert completions(["data"], "im") == ["import"]
    assert completions(["data", "import"], "") == ["json", "markdown", "records"]
    assert completions(["review"], "ac") == ["accept", "account"]
    assert completions(["connect"], "c") == ["claude-code", "claude-desktop", "codex", "cursor"]
    assert completions(["review", "accept"], "") == []  # a proposal id: nothing to offer
