"""One module per screen. The app maps each to a mode (see advisor.tui.app.AdvisorApp.MODES)."""
