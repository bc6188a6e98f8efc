"""Wiring memory-server into Claude Code: the plugin's files, installing the plugin, and installing its hooks
into Claude Code's settings for the `claude mcp add` route. `plugin/hooks/hooks.json` is the one source of the
hooks either way.
"""
