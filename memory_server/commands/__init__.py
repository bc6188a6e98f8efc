"""The command groups of the `memory-server` command line (memory_server/cli.py holds the root group).

common.py: the options every command takes (--root, -v), progress bars, output, and how errors end the
process; program.py: how hints name the program the person ran; hook.py: the Claude Code hook entry points;
dream.py: the /dream group (add a sub-command with `@dream.command()` there, or `dream.add_command(...)` from
another module).
"""
