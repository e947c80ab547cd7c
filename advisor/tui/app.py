"""The Textual app: opens the input(s) in a worker, then one mode per screen, switched by key."""

from __future__ import annotations

import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Header

from advisor.errors import AdvisorError
from advisor.tui.messages import LoadFailed, LoadProgress, SessionReady
from advisor.tui.screens.diff import DiffScreen
from advisor.tui.screens.findings import FindingsScreen
from advisor.tui.screens.kernels import KernelsScreen
from advisor.tui.screens.mfu import MfuScreen
from advisor.tui.screens.overview import OverviewScreen
from advisor.tui.screens.ranges import RangesScreen
from advisor.tui.screens.ranks import RanksScreen
from advisor.tui.screens.roofline import RooflineScreen
from advisor.tui.screens.timeline import TimelineScreen
from advisor.tui.session import Opener, Session, load
from advisor.tui.widgets import app_footer
from advisor.tui.widgets.loading import LoadingView


def default_opener(no_cache: bool = False) -> Opener:
    from advisor.api import open_run

    def opener(path: str, options: Any) -> Any:
        return open_run(path, options, use_cache=not no_cache)

    return opener


class AdvisorApp(App[None]):
    """`advisor tui PATH` / `advisor tui BASE NEW`."""

    CSS_PATH = "advisor.tcss"
    TITLE = "advisor"
    MODES: ClassVar[dict[str, Any]] = {
        "overview": OverviewScreen,
        "findings": FindingsScreen,
        "kernels": KernelsScreen,
        "timeline": TimelineScreen,
        "ranges": RangesScreen,
        "roofline": RooflineScreen,
        "mfu": MfuScreen,
        "ranks": RanksScreen,
        "diff": DiffScreen,
    }
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("o", "goto('overview')", "Overview"),
        Binding("f", "goto('findings')", "Findings"),
        Binding("k", "goto('kernels')", "Kernels"),
        Binding("t", "goto('timeline')", "Timeline"),
        Binding("r", "goto('ranges')", "Ranges"),
        Binding("l", "goto('roofline')", "Roofline"),
        # off the footer (it fills 80 columns); the help panel lists it and the Roofline screen names it
        Binding("u", "goto('mfu')", "MFU", show=False),
        Binding("n", "goto('ranks')", "Ranks", show=False),  # in the help panel (?): the footer fits 80 columns
        Binding("d", "goto('diff')", "Diff"),
        Binding("b", "toggle_side", "Base/New", show=False),  # `tui BASE NEW` only; in the help panel (?)
        Binding("question_mark", "toggle_help", "Help", key_display="?"),
        Binding("q", "quit", "Quit"),
    ]

    def __init__(
        self,
        paths: Sequence[str] = (),
        *,
        opener: Opener | None = None,
        session: Session | None = None,
        nsys: str | None = None,
        ncu: str | None = None,
    ) -> None:
        super().__init__()
        self.paths = list(paths)
        self.opener = opener or default_opener()
        self.nsys = nsys
        self.ncu = ncu  # an Nsight Compute report joined to the one trace (`advisor tui TRACE --ncu REPORT`)
        self.session: Session | None = session
        self.owns_session = session is None  # a session handed in is the caller's to close
        self.error: str | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield LoadingView(id="loading")
        yield app_footer()

    def on_mount(self) -> None:
        if self.session is not None:
            self.post_message(SessionReady(self.session))
        else:
            self.run_worker(self._load, thread=True, exclusive=True, group="load", description="open inputs")

    def _load(self) -> None:
        try:
            session = load(self.paths, self.opener, self._progress, nsys=self.nsys, ncu=self.ncu)
        except AdvisorError as e:
            self.post_message(LoadFailed(e.one_line()))
        except Exception as e:  # a bug: still one line on screen, traceback in the log
            self.log.error(traceback.format_exc())
            self.post_message(LoadFailed(f"internal error: {type(e).__name__}: {e}"))
        else:
            self.post_message(SessionReady(session))

    def _progress(self, done: float, total: float, what: str) -> None:
        self.post_message(LoadProgress(done, total, what))

    def on_load_progress(self, message: LoadProgress) -> None:
        self.query_one(LoadingView).progress(message.done, message.total, message.what)

    def on_load_failed(self, message: LoadFailed) -> None:
        self.error = message.text
        self.query_one(LoadingView).failed(message.text)

    def on_session_ready(self, message: SessionReady) -> None:
        self.session = message.session
        self._name_sides()
        self.switch_mode("diff" if message.session.base is not None else "overview")

    def _name_sides(self) -> None:
        s = self.session
        if s is None:
            return
        paths = [Path(x.path).name for x in (s.base, s.new) if x is not None]
        self.sub_title = " → ".join(paths)
        if s.base is not None:
            self.sub_title += f"  ·  showing {'BASE' if s.showing_base else 'NEW'} (b: switch)"

    async def action_toggle_side(self) -> None:
        """`tui BASE NEW`: the screens other than Diff switch between the two runs. Their screens are built
        again for the run now shown (Diff compares both and stays as it is)."""
        if self.session is None or self.session.base is None:
            return
        self.session.showing_base = not self.session.showing_base
        self._name_sides()
        back = self.current_mode
        if back != "diff":
            await self.switch_mode("diff")
        for mode in self.MODES:
            if mode != "diff":
                await self.remove_mode(mode)
                self.add_mode(mode, self.MODES[mode])
        if back != "diff":
            await self.switch_mode(back)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "toggle_side":
            return self.session is not None and self.session.base is not None
        if action != "goto":
            return True
        if self.session is None:
            return False
        return not (parameters and parameters[0] == "diff" and self.session.base is None)

    def action_toggle_help(self) -> None:
        """Show or hide the key panel: every key of the app and of the screen in front, with what it does."""
        if self.screen.query("HelpPanel"):
            self.action_hide_help_panel()
        else:
            self.action_show_help_panel()

    def action_goto(self, mode: str) -> None:
        if self.current_mode != mode:
            self.switch_mode(mode)

    def on_unmount(self) -> None:
        if self.session is not None and self.owns_session:
            self.session.close()
