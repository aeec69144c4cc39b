"""Nothing outside the engine layers asks which database engine runs.

Every difference between SQLite and PostgreSQL is a method or property of
``dbengine.database_engine()`` or ``retrieval.engines.retrieval_engine()``;
a test of ``connection.vendor``, an ``is_postgres`` helper or a comparison
with an engine's name anywhere else (migrations included) fails here, naming
the file and line. Tests themselves may ask (to skip or pick fixtures)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ALLOWED = ("dbengine/", "retrieval/engines/")
# Lines that choose which engine to *start* from a person's option (not which
# one runs): the test settings' VETTED_TEST_ENGINE, a benchmark's --engine.
CHOICES = {
    ("memory_site/settings_test.py", 'if _engine == "postgres" and not os.environ.get("VETTED_DATABASE_URL"):'),
    ("devtools/scratch.py", 'if engine == "postgres":'),
}
SKIPPED_FOLDERS = {"tests", ".venv", "venv", "node_modules", "build", "dist", "site", "staticfiles", ".git"}

ENGINE_NAME = r"""["'](?:postgres|postgresql|sqlite|sqlite3)["']"""
BRANCH = re.compile(
    r"\.vendor\b"
    r"|\bis_postgres\b"
    rf"|(?:==|!=)\s*{ENGINE_NAME}"
    rf"|{ENGINE_NAME}\s*(?:==|!=|in\b)"
)


def _sources() -> list[Path]:
    found = []
    for path in ROOT.rglob("*.py"):
        relative = path.relative_to(ROOT)
        if relative.parts[0] in SKIPPED_FOLDERS or relative.parts[0].startswith("."):
            continue
        found.append(relative)
    return found


def branches(text: str) -> list[tuple[int, str]]:
    return [(number, line.strip()) for number, line in enumerate(text.splitlines(), 1) if BRANCH.search(line)]


def test_no_engine_branch_outside_the_engine_layers():
    found = []
    for relative in _sources():
        if relative.as_posix().startswith(ALLOWED):
            continue
        for number, line in branches((ROOT / relative).read_text(encoding="utf-8")):
            if (relative.as_posix(), line) in CHOICES:
                continue
            found.append(f"{relative}:{number}: {line}")
    assert not found, (
        "Engine branches outside dbengine/ and retrieval/engines/ (make each a method or property of "
        "dbengine.database_engine() or retrieval.engines.retrieval_engine()):\n" + "\n".join(found)
    )


def test_the_check_sees_each_kind_of_branch():
    # The patterns above must catch what they are for, or the test above cannot fail.
    assert branches('if connection.vendor == "postgresql":')
    assert branches("if schema_editor.connection.vendor != 'sqlite':")
    assert branches("if is_postgres(cursor):")
    assert branches('postgres = name == "postgres"')
    assert branches('if "postgres" in str(database["ENGINE"]):')
    assert not branches("return database_engine(connection).shared_by_processes")
    assert not branches('ENGINE = "dbengine.postgres"')


def test_the_engine_layers_exist():
    assert (ROOT / "dbengine" / "base.py").is_file()
    assert (ROOT / "retrieval" / "engines" / "base.py").is_file()
