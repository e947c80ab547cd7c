"""Every message the app's workers post: results arrive on the UI thread as these."""

from __future__ import annotations

from typing import Any

from textual.message import Message

from advisor.tui.session import Session


class LoadProgress(Message):
    """Ingest progress from the loading worker: done of total units, and what it is doing."""

    def __init__(self, done: float, total: float, what: str) -> None:
        super().__init__()
        self.done, self.total, self.what = done, total, what


class SessionReady(Message):
    """The run(s) are open and analysed."""

    def __init__(self, session: Session) -> None:
        super().__init__()
        self.session = session


class LoadFailed(Message):
    """Opening or analysing an input failed; `text` is the one-line error."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class DataReady(Message):
    """A screen's query finished: `kind` names the query, `data` is what the engine returned."""

    def __init__(self, kind: str, data: Any, token: object = None) -> None:
        super().__init__()
        self.kind, self.data, self.token = kind, data, token
