"""One module per widget; each renders engine data as Rich Text, never trace text as markup."""

from textual.widgets import Footer


def app_footer() -> Footer:
    """The footer every screen shows: compact and without the palette hint (ctrl+p still opens the
    palette), so the mode keys, Help and Quit fit in 80 columns."""
    return Footer(compact=True, show_command_palette=False)
