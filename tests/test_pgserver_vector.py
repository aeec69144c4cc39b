"""The test PostgreSQL gets a pgvector that runs on this processor: the copy
replaces the library, the control file and every install script, and a
second run changes nothing."""

from __future__ import annotations

from pathlib import Path

from devtools.pgserver_vector import EXTENSION, LIBRARY, replace_vector


def _install(root: Path, version: str, library: bytes) -> Path:
    (root / LIBRARY).parent.mkdir(parents=True)
    (root / EXTENSION).mkdir(parents=True)
    (root / LIBRARY).write_bytes(library)
    (root / EXTENSION / "vector.control").write_text(f"default_version = '{version}'\n")
    (root / EXTENSION / f"vector--{version}.sql").write_text(f"-- {version}\n")
    (root / EXTENSION / "pg_trgm.control").write_text("default_version = '1.6'\n")
    return root


def test_pgvector_is_copied_whole_and_other_extensions_are_left_alone(tmp_path):
    target = _install(tmp_path / "target", "0.8.2", b"crashes without avx512")
    source = _install(tmp_path / "source", "0.8.5", b"portable")

    assert replace_vector(target, source) is True

    assert (target / LIBRARY).read_bytes() == b"portable"
    assert sorted(p.name for p in (target / EXTENSION).glob("vector--*.sql")) == ["vector--0.8.5.sql"]
    assert "0.8.5" in (target / EXTENSION / "vector.control").read_text()
    assert (target / EXTENSION / "pg_trgm.control").is_file()
    assert not (target / LIBRARY.with_name("vector.so.new")).exists()


def test_a_second_run_changes_nothing(tmp_path):
    target = _install(tmp_path / "target", "0.8.2", b"crashes without avx512")
    source = _install(tmp_path / "source", "0.8.5", b"portable")
    replace_vector(target, source)

    assert replace_vector(target, source) is False
