"""What every screen shares: the session it explores and queries run in worker threads."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from textual.screen import Screen
from textual.worker import Worker, WorkerState, get_current_worker

from advisor.tui.messages import DataReady
from advisor.tui.session import Session


class AdvisorScreen(Screen[None]):
    """A screen over the app's session. `fetch` runs an engine query off the UI thread."""

    @property
    def session(self) -> Session:
        session = getattr(self.app, "session", None)
        if session is None:  # screens are only shown once the session is ready
            raise RuntimeError("no session loaded")
        return session  # type: ignore[no-any-return]

    def fetch(self, kind: str, fn: Callable[..., Any], *args: Any, token: object = None, **kwargs: Any) -> None:
        """Run `fn(run, *args, **kwargs)` in a thread; its result arrives as DataReady(kind, ...).

        A newer fetch of the same kind supersedes an older one, whose result is then dropped.
        """
        self.run_worker(
            partial(self._query, kind, fn, args, kwargs, token),
            thread=True,
            exclusive=True,
            group=f"{kind}-{id(self)}",
            description=f"query {kind}",
            exit_on_error=False,
        )

    def _query(self, kind: str, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
               token: object) -> None:
        data = self.session.query(fn, *args, **kwargs)
        if not get_current_worker().is_cancelled:
            self.post_message(DataReady(kind, data, token))

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A failed query is shown, not swallowed (its text may hold trace names: no markup)."""
        error = event.worker.error
        if event.state == WorkerState.ERROR and error is not None:
            self.notify(f"{event.worker.description} failed: {error}", severity="error", markup=False)
