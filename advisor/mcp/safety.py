"""What an agent may ask for: input paths under the server's roots, and read-only SQL.

Why so strict: the caller is a model that reads text it did not write (traces, web pages, issues),
so a prompt-injected request must find nothing outside the roots it was started with and no way to
write, attach, download or load. Paths are resolved (symlinks followed, `..` collapsed) before they
are compared with the resolved roots; a path whose text holds a `..` part is refused outright, so
the answer never depends on where a link points today. SQL passes a statement allow-list here and
then runs on a read-only DuckDB file with external access off and its configuration locked
(advisor.mcp.query), so either guard alone would hold.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from advisor.errors import InputError

ROOT_HINT = "pass a path under one of the roots the server was started with (advisor mcp --root DIR)"


class Refused(InputError):
    """A request the agent surface refuses by policy (outside the roots, a write or attach in SQL)."""


@dataclass(frozen=True)
class Roots:
    """The directories the server may read, resolved once at start."""

    dirs: tuple[Path, ...]

    @classmethod
    def of(cls, given: list[str]) -> Roots:
        dirs = []
        for g in given:
            p = Path(g).expanduser().resolve()
            if not p.is_dir():
                raise InputError(f"--root {g}: not a directory", "give an existing directory of traces")
            dirs.append(p)
        if not dirs:
            raise InputError("advisor mcp needs at least one --root DIR", "the server reads traces only under them")
        return cls(tuple(dirs))

    def check(self, raw: str) -> str:
        """`raw` resolved, when it names an existing file or directory under a root; Refused otherwise.

        Relative paths are taken relative to the first root (an agent sees root-relative names in
        results), never the server's working directory.
        """
        if not raw or "\x00" in raw:
            raise Refused("the path is empty or holds a NUL byte", ROOT_HINT)
        given = Path(os.path.expanduser(raw))
        if ".." in given.parts:
            raise Refused(f"'..' is not allowed in a path (got {raw!r})", ROOT_HINT)
        full = (given if given.is_absolute() else self.dirs[0] / given).resolve()
        if not self.holds(full):
            linked = _lexically_inside(given, self.dirs)
            why = "resolves through a symlink to a place outside" if linked else "is outside"
            raise Refused(f"the path {why} the server's roots (got {raw!r})", ROOT_HINT)
        if not full.exists():
            raise InputError(f"no such file or directory under the roots (got {raw!r})", ROOT_HINT)
        if full.is_dir():
            self._check_inside(full, raw)
        return str(full)

    def _check_inside(self, folder: Path, raw: str) -> None:
        """A directory input (rank files, repeated captures) is read file by file: a symlink inside it
        that leads out of the roots is refused like a symlinked path."""
        for top, dirs, files in os.walk(folder):
            for name in (*dirs, *files):
                p = Path(top) / name
                if p.is_symlink() and not self.holds(p.resolve()):
                    raise Refused(f"the directory holds {name!r}, which resolves through a symlink to a place "
                                  f"outside the server's roots (got {raw!r})", ROOT_HINT)

    def holds(self, resolved: Path) -> bool:
        return any(resolved == d or resolved.is_relative_to(d) for d in self.dirs)


def _lexically_inside(given: Path, dirs: tuple[Path, ...]) -> bool:
    """Whether the path's text (links not followed) lies under a root: then a symlink took it out."""
    text = Path(os.path.abspath(given if given.is_absolute() else dirs[0] / given))
    return any(text == d or text.is_relative_to(d) for d in dirs)


def check_sql(sql: str) -> str:
    """`sql` when it is exactly one SELECT (WITH/FROM/VALUES/table functions included); Refused otherwise.

    DuckDB's own parser classifies the statements, so no keyword scan can be fooled by comments,
    quoting or case: COPY, ATTACH, INSTALL/LOAD, SET, PRAGMA, EXPLAIN, CREATE, EXPORT are refused.
    """
    import duckdb

    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as e:
        raise InputError(f"SQL does not parse: {str(e).splitlines()[0]}", "send one SELECT statement") from None
    if len(statements) != 1:
        raise Refused(f"{len(statements)} statements given; the query tool runs exactly one SELECT",
                      "send one SELECT statement, without ';'-separated others")
    kind = statements[0].type
    if kind != duckdb.StatementType.SELECT:
        name = str(kind).rsplit(".", 1)[-1]
        raise Refused(f"{name} statements are not allowed: the query tool is read-only (SELECT only)",
                      "read the tables with SELECT; nothing can be written, attached, installed or loaded")
    return sql
