#!/usr/bin/env python3
"""check_layers.py — the include rules that DESIGN.md's layout states, held against the tree.

Usage: check_layers.py [SOURCE_ROOT]

  proto/       the contract includes only itself and the system: a quoted include
               names a file of proto/, an angle include names a file of proto/include/
               or no file of the tree (a system header). So proto includes nothing of
               client/ (libgaruda), daemon/, util/ or backends/.
  the session  daemon/session.{c,h} (the object), session_req.{c,h} (the requests) and
  layers       session_conn.{c,h} (the connection) include down only: a layer includes
               the headers of its own layer and the ones below, never one above.

Exit 0 when every rule holds, 1 with each breach listed as FILE:LINE.
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)
# where the tree keeps sources other than proto's (an angle include naming one of these
# files is the tree's, not the system's)
OTHER_SOURCES = ("backends", "client", "daemon", "util")
# the session module, lowest layer first
SESSION_LAYERS = ("session", "session_req", "session_conn")


def includes(path):
    text = open(path).read()
    for m in INCLUDE.finditer(text):
        yield text.count("\n", 0, m.start()) + 1, m.group(1), m.group(2)


def tree_files(root, tops):
    out = {}
    for top in tops:
        for d, _, names in os.walk(os.path.join(root, top)):
            for n in names:
                if n.endswith((".c", ".h")):
                    full = os.path.join(d, n)
                    out[os.path.relpath(full, root)] = full
    return out


def check_proto(root):
    proto = os.path.join(root, "proto")
    others = tree_files(root, OTHER_SOURCES)
    bad = []
    for rel, path in sorted(tree_files(root, ("proto",)).items()):
        for line, kind, name in includes(path):
            where = f"{rel}:{line}: #include {kind}{name}{'>' if kind == '<' else kind}"
            dirs = [os.path.join(proto, "include")]
            if kind == '"':
                dirs = [os.path.dirname(path), proto] + dirs
            if any(os.path.isfile(os.path.join(d, name)) for d in dirs):
                continue
            owner = next((o for o in others if o == name or o.endswith("/" + name)), None)
            if kind == '"' or owner:
                bad.append(f"{where}: outside proto/ ({owner or 'no file of proto/'})")
    return bad


def check_sessions(root):
    daemon = os.path.join(root, "daemon")
    bad = []
    for level, layer in enumerate(SESSION_LAYERS):
        for ext in (".c", ".h"):
            rel = f"daemon/{layer}{ext}"
            path = os.path.join(root, rel)
            if not os.path.isfile(path):
                if ext == ".c":
                    bad.append(f"{rel}: missing (the session layers are {SESSION_LAYERS})")
                continue
            for line, _, name in includes(path):
                stem = os.path.splitext(name)[0]
                if stem in SESSION_LAYERS and SESSION_LAYERS.index(stem) > level \
                        and os.path.isfile(os.path.join(daemon, name)):
                    bad.append(f"{rel}:{line}: includes {name}, a layer above {layer}")
    return bad


def main(argv):
    root = argv[0] if argv else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    bad = check_proto(root) + check_sessions(root)
    for b in bad:
        print(b, file=sys.stderr)
    if bad:
        print(f"check_layers: {len(bad)} include(s) against the layering (DESIGN.md, "
              "\"Parts and layout\")", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
