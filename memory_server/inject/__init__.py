"""What the hooks add to the agent's context, read from the memory's records at the right moment.

- `brief.py`: the session-start brief (the last session's open items and where it stopped, the person's
  decisions of the last days, lessons touched recently, topics that may be stale).
- `fixes.py`: on a failed tool call, the earlier fix of the same error (lessons, then earlier sessions).
- `prompt_recall.py`: per-prompt recall (off by default): at most two hits above a score bar.
- `quote.py`: every injected text is redacted, cut and quoted as data with its source path.
- `index_reader.py`: the keyword index opened read-only (a hook writes nothing and loads no model).

Each returns the text to add ("" for nothing); `commands/hook.py` wraps it in the hook's JSON answer.
"""
