#!/usr/bin/env python3
"""socket-order-docs.py SOURCE_ROOT — the socket search order (proto/paths.h) is said
the same way everywhere a user reads it: README.md, docs/client.md, docs/python.md,
garudad(8) and garctl(1) each give the user's own socket, the fallback past a dead one,
and the system socket, in that order."""
import re
import sys

root = sys.argv[1]
docs = ["README.md", "docs/client.md", "docs/python.md", "docs/garudad.8", "docs/garctl.1"]
steps = [r"\$XDG_RUNTIME_DIR/garuda/(garuda|control)\.sock",
         r"if nothing listens there \(that garudad was killed and left it\) the next",
         r"/run/garuda/(garuda|control)\.sock"]
bad = []
for d in docs:
    text = open(f"{root}/{d}", encoding="utf-8").read()
    text = re.sub(r"\n\.[A-Z]+ ?", " ", text)      # roff requests on their own lines
    text = re.sub(r"[`*\\]|\\f[BIRP]", "", text)   # markdown and roff markup
    text = re.sub(r"\s+", " ", text)
    at = 0
    for step in steps:
        m = re.compile(step).search(text, at)
        if not m:
            bad.append(f"{d}: no '{step}' after offset {at}")
            break
        at = m.end()
if bad:
    print("\n".join(bad))
    sys.exit(1)
print("the socket search order reads the same in", ", ".join(docs))
