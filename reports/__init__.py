"""Report renderers (HTML, Markdown). Installed as advisor.reports."""
