"""The run's `input` facts on the Dask path: each rank file's facts (engine.summary.input_info of its rebuilt
run) folded in the driver into the facts a directory read states (parsers.kineto.merge._run_row and _notes,
advisor.ingest.to_model_tables):

- format, tool and export schema are the first file's; hosts and captured tables the union; world size and
  ranks the run's (every rank's rebuilt run already carries them);
- the sha256 is the directory's (advisor.ingest.members_sha256: each member's name and sha256): a rank's from
  its own open (the cache checked it), the other members' (a PROVENANCE.json) hashed here; bytes are the
  directory's files' sizes;
- notes: cleaned-event counts and end-before-start counts summed, time units the union, `files` every rank
  file in file order, the device properties listed summed, `files_skipped` as the directory read says.

What the driver keeps per rank is its file name and sha256 (the document lists every file anyway).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SUMMED = ("device_properties_listed",)
UNION = ("time_unit", "displayTimeUnit")


@dataclass
class InputFold:
    """Every rank file's input facts, folded as they arrive (in any order)."""

    first: tuple[int, dict[str, Any]] | None = None  # the lowest file index's facts
    hosts: set[str] = field(default_factory=set)
    captured: set[str] = field(default_factory=set)
    files: dict[int, tuple[str, str | None]] = field(default_factory=dict)  # file index -> name, sha256
    notes: dict[str, Any] = field(default_factory=dict)

    def add(self, facts: Mapping[str, Any], index: int) -> None:
        if self.first is None or index < self.first[0]:
            self.first = (index, {k: v for k, v in facts.items() if k != "notes"})
        self.hosts |= set(str(facts.get("host") or "").split(",")) - {""}
        self.captured |= set(facts.get("captured") or ())
        self.files[index] = (Path(str(facts.get("path"))).name, facts.get("sha256"))
        for k, v in (facts.get("notes") or {}).items():
            self._note(k, v)

    def _note(self, key: str, value: Any) -> None:
        if key == "files":
            return
        if key in UNION:
            self.notes[key] = sorted(set(self.notes.get(key, [])) | set(value))
        elif key in SUMMED or key.startswith("cleaned_") or key.endswith("_end_before_start"):
            self.notes[key] = self.notes.get(key, 0) + int(value)
        else:
            self.notes.setdefault(key, value)

    def facts(self, path: Path, rank_files: list[Path]) -> dict[str, Any]:
        """engine.summary.input_info's dict for the directory `path` read as one run of `rank_files`."""
        from advisor.ingest import members_sha256, source_bytes
        from advisor.parsers.kineto.merge import skipped_files
        from advisor.redact import redact

        first = self.first[1] if self.first is not None else {}
        known = {name: sha for name, sha in self.files.values() if sha}
        notes = dict(self.notes, files=[f.name for f in rank_files])
        if skipped := skipped_files(path, rank_files):
            notes["files_skipped"] = skipped
        return first | {
            "path": str(path),
            "sha256": members_sha256(path, known),
            "bytes": source_bytes(path),
            "host": ",".join(sorted(self.hosts)) or None,
            "captured": sorted(self.captured),
            "notes": redact(dict(sorted(notes.items()))),
        }
