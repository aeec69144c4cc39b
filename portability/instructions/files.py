"""Which files are instruction files, and reading them without trusting them:
no binary, nothing over the size limit, nothing outside the folders given
(symlinks and ``@path`` imports included)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from portability.markdown_io.notes import MAX_FILE_BYTES, MarkdownError
from portability.markdown_io.parse import read_text

# The names each tool reads (matched case-insensitively on the file name).
INSTRUCTION_NAMES = {
    "claude.md": "Claude Code",
    "claude.local.md": "Claude Code",
    "agents.md": "Codex and others",
    "agent.md": "Codex and others",
    "gemini.md": "Gemini CLI",
    "copilot-instructions.md": "GitHub Copilot",
    ".windsurfrules": "Windsurf",
    ".cursorrules": "Cursor (legacy)",
}
_PRIORITY = {name: rank for rank, name in enumerate(INSTRUCTION_NAMES)}
SUFFIX_TOOLS = {".mdc": "Cursor", ".instructions.md": "GitHub Copilot"}
# Folders a walk never enters: other tools' caches and dependencies, not memory.
SKIPPED_DIRS = {".git", "node_modules", ".venv", "venv", "__pycache__", ".tox", ".mypy_cache", "dist", "build"}
MAX_FILES = 500
BINARY_PROBE = 8192

# Claude Code's import syntax: "@path" outside code, a path with a slash or a Markdown suffix.
_IMPORT_RE = re.compile(r"(?<![\w`@/])@((?:~|\.{1,2})?/?[\w.\-/~]+)")
_FENCE_RE = re.compile(r"^\s*(```|~~~)")
_INLINE_CODE_RE = re.compile(r"`[^`\n]*`")


@dataclass(frozen=True)
class Source:
    """One file to read: its label (the name shown on cards and filtered by) and, for an import, who imported it."""

    path: Path
    label: str
    tool: str
    root: Path  # the folder given: imports are followed only inside it
    prefix: str = ""  # the folder's name when several were given
    imported_by: str = ""  # "CLAUDE.md line 31"


@dataclass(frozen=True)
class Refusal:
    file: str
    reason: str

    def as_dict(self) -> dict[str, str]:
        return {"file": self.file, "reason": self.reason}


def tool_of(path: Path) -> str | None:
    name = path.name.lower()
    if name in INSTRUCTION_NAMES:
        return INSTRUCTION_NAMES[name]
    for suffix, tool in SUFFIX_TOOLS.items():
        if name.endswith(suffix):
            return tool
    return None


def is_instruction_path(path: Path) -> bool:
    return tool_of(path) is not None


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
    except (ValueError, OSError):
        return False
    return True


def _walk(root: Path):
    for folder, dirs, names in os.walk(root):  # never follows symlinked folders
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
        for name in sorted(names):
            yield Path(folder) / name


def collect_sources(paths: list[Path | str], *, any_name: bool = False) -> tuple[list[Source], list[Refusal]]:
    """The instruction files under ``paths`` (folders walked, files taken as
    given) and what was refused. ``any_name``: every file in a folder is an
    instruction file (an upload, whose names the person chose). Labels are
    relative to the one folder given, else to each file's folder."""
    given = [Path(p) for p in paths]
    sources: list[Source] = []
    refusals: list[Refusal] = []
    seen: set[Path] = set()
    multiple = len(given) > 1
    for root in given:
        if not root.exists():
            refusals.append(Refusal(str(root), "no such file or folder"))
            continue
        files = [root] if root.is_file() else list(_walk(root))
        base = root.parent if root.is_file() else root
        for path in files:
            prefix = f"{base.name}/" if multiple and root.is_dir() else ""
            label = prefix + path.relative_to(base).as_posix()
            tool = tool_of(path) or ("Markdown" if (any_name or root.is_file()) else None)
            if tool is None:
                continue
            # A file named on the command line is read wherever its link points (it was asked for);
            # one found by walking a folder must stay inside it.
            if root.is_dir() and not _inside(path, base):
                refusals.append(Refusal(label, "a link to a file outside the folder given; not read"))
                continue
            if path.resolve() in seen:
                continue
            seen.add(path.resolve())
            if len(sources) >= MAX_FILES:
                refusals.append(Refusal(label, f"more than {MAX_FILES} instruction files; the rest were not read"))
                break
            sources.append(Source(path=path, label=label, tool=tool, root=base, prefix=prefix))
    # The main files first, so a text repeated elsewhere is proposed under the file people read first.
    sources.sort(key=lambda s: (s.label.count("/"), _PRIORITY.get(s.path.name.lower(), len(_PRIORITY)), s.label))
    return sources, refusals


def read_source(path: Path) -> str:
    """The file's text; MarkdownError saying why not (binary, too long, not UTF-8, empty)."""
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise MarkdownError(f"too long ({size} bytes; at most {MAX_FILE_BYTES}); split it or import its parts")
        with path.open("rb") as handle:
            head = handle.read(BINARY_PROBE)
    except OSError as exc:
        raise MarkdownError(f"cannot be read: {exc.strerror}") from None
    if b"\x00" in head:
        raise MarkdownError("a binary file (it holds NUL bytes); only text instruction files are read")
    return read_text(path)


def imports_in(text: str) -> list[tuple[int, str]]:
    """``(line number, path)`` of each ``@path`` import outside code."""
    found: list[tuple[int, str]] = []
    fenced = False
    for number, line in enumerate(text.split("\n"), start=1):
        if _FENCE_RE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        for match in _IMPORT_RE.finditer(_INLINE_CODE_RE.sub("", line)):
            target = match.group(1).rstrip(".,;:)")
            if "/" in target or target.lower().endswith((".md", ".mdc", ".txt")):
                found.append((number, target))
    return found


def follow_imports(source: Source, text: str, seen: set[Path]) -> tuple[list[Source], list[Refusal]]:
    """The files ``source`` imports, once (imports inside them are not
    followed), and only inside ``root``: the home folder, absolute paths and
    ``..`` out of it are refused by name."""
    root = source.root
    found: list[Source] = []
    refusals: list[Refusal] = []
    for line, target in imports_in(text):
        where = f"{source.label} line {line}"
        if target.startswith("~") or target.startswith("/"):
            refusals.append(
                Refusal(where, f"@{target} is outside the folder given; imports are followed only inside it")
            )
            continue
        path = source.path.parent / target
        if not _inside(path, root):
            refusals.append(
                Refusal(where, f"@{target} is outside the folder given; imports are followed only inside it")
            )
            continue
        if not path.is_file():
            refusals.append(Refusal(where, f"@{target}: no such file"))
            continue
        if path.resolve() in seen:
            continue
        seen.add(path.resolve())
        label = source.prefix + path.resolve().relative_to(root.resolve()).as_posix()
        found.append(
            Source(path=path, label=label, tool=source.tool, root=root, prefix=source.prefix, imported_by=where)
        )
    return found, refusals
