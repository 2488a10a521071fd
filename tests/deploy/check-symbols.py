#!/usr/bin/env python3
"""check-symbols.py — debian/libgaruda0.symbols says exactly what libgaruda exports.

Usage: check-symbols.py LIBRARY SYMBOLS_FILE CHANGELOG

No package build: the built library's dynamic symbol table (nm -D --defined-only,
with each symbol's version) against the symbols file, the way dpkg-gensymbols reads
it. Checks: the file's library line names the library's SONAME; every exported
symbol (and every version node, as NODE@NODE) is in the file with its version node,
and the file lists nothing the library does not export; every minimum version is a
version of the package that holds the node (GARUDA_X.Y: upstream X.Y or later) and
not newer than the package's current version (debian/changelog). When dpkg-gensymbols
is installed, it is also run as the package build runs it (dh_makeshlibs -- -c4, in
debian/rules): exit 0 required.

Exit 0 when they agree, 1 with the differences listed.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile


def run(*args, **kw):
    return subprocess.run(list(args), check=True, capture_output=True, text=True, **kw).stdout


def soname(lib):
    m = re.search(r"^\s*SONAME\s+(\S+)", run("objdump", "-p", lib), flags=re.M)
    return m.group(1) if m else None


def exported(lib):
    """{"name@NODE"} of the defined dynamic symbols; version nodes as NODE@NODE.
    Unversioned exports come back as bare names (a fault: the version script did not
    apply)."""
    syms = set()
    for line in run("nm", "-D", "--defined-only", lib).splitlines():
        parts = line.split()
        if len(parts) < 3:
            continue
        kind, name = parts[1], parts[2]
        if kind == "A" and "@" not in name:  # a version node's definition
            syms.add(f"{name}@{name}")
            continue
        name = name.replace("@@", "@")
        syms.add(name)
    return syms


def symbols_file(path):
    """(library line fields, {"name@NODE": minver}, faults)"""
    head, syms, faults = None, {}, []
    for n, line in enumerate(open(path).read().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        if line.startswith("* "):  # a field (Build-Depends-Package: ...)
            continue
        if line.startswith(" "):
            fields = line.split()
            if fields[0].startswith("("):
                faults.append(f"{path}:{n}: tagged symbol not understood here: {line.strip()}")
                continue
            if len(fields) < 2:
                faults.append(f"{path}:{n}: no minimum version: {line.strip()}")
                continue
            if fields[0] in syms:
                faults.append(f"{path}:{n}: {fields[0]} listed twice")
            syms[fields[0]] = fields[1]
            continue
        if head is not None:
            faults.append(f"{path}:{n}: a second library line (this check knows one library)")
        head = line.split()
    if head is None:
        faults.append(f"{path}: no library line")
    return head, syms, faults


def changelog_version(path):
    m = re.match(r"^\S+ \(([^)]+)\)", open(path).readline())
    if not m:
        sys.exit(f"{path}: no version on its first line")
    return m.group(1)


def version_le(a, b):
    """a <= b as dpkg compares Debian versions."""
    if shutil.which("dpkg"):
        return subprocess.run(["dpkg", "--compare-versions", a, "le", b]).returncode == 0
    key = lambda v: [int(x) if x.isdigit() else x for x in re.split(r"[.~+-]", v)]
    return key(a) <= key(b)


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    lib, path, changelog = (os.path.abspath(a) for a in sys.argv[1:])
    faults = []
    head, listed, f = symbols_file(path)
    faults += f
    so = soname(lib)
    if head and (len(head) < 2 or head[0] != so):
        faults.append(f"{path}: library line names {head[0] if head else '?'}, the library's SONAME is {so}")
    have = exported(lib)
    for s in sorted(have - set(listed)):
        faults.append(f"exported but not in {os.path.basename(path)}: {s}"
                      + ("" if "@" in s else " (unversioned: the version script did not apply)"))
    for s in sorted(set(listed) - have):
        faults.append(f"in {os.path.basename(path)} but not exported: {s}")
    current = changelog_version(changelog)
    for s, minver in sorted(listed.items()):
        node = s.split("@", 1)[1] if "@" in s else ""
        m = re.match(r"^[A-Z]+_(\d+(?:\.\d+)*)$", node)
        if not m:
            faults.append(f"{s}: no version node GARUDA_X.Y")
            continue
        if not version_le(m.group(1), minver):
            faults.append(f"{s}: minimum version {minver} predates its node {node}")
        if not version_le(minver, current):
            faults.append(f"{s}: minimum version {minver} is newer than the package ({current})")

    # the package build's own check, when its tool is here
    if shutil.which("dpkg-gensymbols") and head and len(head) >= 2:
        with tempfile.TemporaryDirectory() as tmp:
            r = subprocess.run(["dpkg-gensymbols", "-c4", f"-p{head[1]}", f"-v{current}", f"-e{lib}",
                                f"-I{path}", f"-O{tmp}/symbols", f"-P{tmp}"],
                               capture_output=True, text=True, cwd=tmp)
            if r.returncode != 0:
                faults.append(f"dpkg-gensymbols -c4 (as dh_makeshlibs -- -c4 runs it) exit {r.returncode}:\n"
                              + r.stdout + r.stderr)
            else:
                print("dpkg-gensymbols -c4: no difference")
    else:
        print("dpkg-gensymbols not installed: its check left out")

    if faults:
        print("debian/libgaruda0.symbols and the built library disagree:")
        for x in faults:
            print("  " + x)
        return 1
    print(f"{len(listed)} symbols: {os.path.basename(path)} matches {os.path.basename(lib)} ({so})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
