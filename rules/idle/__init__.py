"""Idle rules: GPU idle time and what the host was doing meanwhile."""
