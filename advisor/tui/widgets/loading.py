"""What the app shows while it opens its inputs: what it is doing and how far it got."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Label, ProgressBar


class LoadingView(Vertical):
    """A label and a progress bar, updated from LoadProgress messages."""

    def compose(self) -> ComposeResult:
        yield Label("Opening…", id="loading-label", markup=False)
        yield ProgressBar(total=1.0, show_eta=False, id="loading-bar")

    def progress(self, done: float, total: float, what: str) -> None:
        self.query_one("#loading-label", Label).update(what)
        self.query_one("#loading-bar", ProgressBar).update(total=max(total, 1e-9), progress=done)

    def failed(self, text: str) -> None:
        label = self.query_one("#loading-label", Label)
        label.update(f"Could not open the input: {text}\nPress q to quit.")
        label.add_class("error")
