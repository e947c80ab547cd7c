"""Errors the library raises. Surfaces turn them into one line and exit code 2; library code never prints."""

from __future__ import annotations


class AdvisorError(Exception):
    """Base class: `message` says what went wrong with which file, `hint` what to do about it."""

    exit_code = 2

    def __init__(self, message: str, hint: str | None = None, path: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.path = path

    def one_line(self) -> str:
        parts = [self.message]
        if self.hint:
            parts.append(self.hint)
        return "; ".join(parts)


class InputError(AdvisorError):
    """The input file is missing, unreadable, of an unknown format, or malformed."""


class UnsupportedFormat(InputError):
    """The file is not one of the formats advisor reads."""


class SchemaError(InputError):
    """A required table or column is missing from an export (names the column and exporter version)."""


class ToolMissing(AdvisorError):
    """An external tool (nsys, ncu-report) is needed and absent or too old."""


class LimitExceeded(InputError):
    """The input exceeds a documented size limit (decompression bomb guard, JSON size)."""


class OutputError(AdvisorError):
    """The `-o` path cannot be written, or writing it could destroy data (an input, a device, a directory)."""
