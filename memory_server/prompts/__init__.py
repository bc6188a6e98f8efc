"""The server's MCP prompts, for any client: what each one's text says, rendered from the memory.

`dream.py` (the /dream procedure through the server's dream tools, for clients without a shell: the text is
`dream.md`), `recall.py` (what the memory holds on a subject, hits quoted with their paths) and `resume.py`
(where the last session stopped and what it left open, from the session records). The server (server.py)
registers them; every text taken from a file is redacted and quoted as data, with its path.
"""
