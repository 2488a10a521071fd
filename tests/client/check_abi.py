#!/usr/bin/env python3
"""check_abi.py — libgaruda exports exactly the functions of its public header.

Usage: check_abi.py LIBRARY HEADER VERSION_SCRIPT

Checks: the soname is libgaruda.so.0; the dynamic symbol table defines exactly the
functions declared in garuda.h, all in version node GARUDA_0.1, and nothing else
(no proto, util, backend or internal symbol leaks); the version script lists the
same set.
"""
import re
import subprocess
import sys


def header_functions(path):
    """Functions declared in path and in the <garuda/...> headers it includes."""
    text = open(path).read()
    import os
    for inc in re.findall(r"#include <garuda/([a-z_]+\.h)>", text):
        for root in (os.path.dirname(path), os.path.join(os.path.dirname(path), "../../../backends/include/garuda")):
            cand = os.path.join(root, inc)
            if os.path.exists(cand):
                text += open(cand).read()
                break
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r"^\s*#.*$", "", text, flags=re.M)
    return set(re.findall(r"\b(garuda_[a-z0-9_]+)\s*\(", text))


def script_globals(path):
    text = re.sub(r"/\*.*?\*/", "", open(path).read(), flags=re.S)
    m = re.search(r"global:(.*?)local:", text, flags=re.S)
    return {s.strip() for s in m.group(1).split(";") if s.strip()}


def exported(lib):
    out = subprocess.run(["nm", "-D", "--defined-only", lib], check=True,
                         capture_output=True, text=True).stdout
    syms = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) != 3:
            continue
        name, _, ver = parts[2].partition("@@")
        if not ver:
            name, _, ver = parts[2].partition("@")
        syms[name] = (parts[1], ver)
    syms.pop("GARUDA_0.1", None)
    return syms


def soname(lib):
    out = subprocess.run(["readelf", "-d", lib], check=True, capture_output=True,
                         text=True).stdout
    m = re.search(r"\(SONAME\).*\[(.*)\]", out)
    return m.group(1) if m else None


def main():
    lib, header, script = sys.argv[1:4]
    errors = []
    if soname(lib) != "libgaruda.so.0":
        errors.append(f"soname is {soname(lib)!r}, expected 'libgaruda.so.0'")
    hdr = header_functions(header)
    glb = script_globals(script)
    exp = exported(lib)
    for name in sorted(hdr - glb):
        errors.append(f"{name}: declared in the header, missing from the version script")
    for name in sorted(glb - hdr):
        errors.append(f"{name}: in the version script, not declared in the header")
    for name in sorted(set(exp) - hdr):
        errors.append(f"{name}: exported but not public")
    for name in sorted(hdr - set(exp)):
        errors.append(f"{name}: public but not exported")
    for name, (kind, ver) in sorted(exp.items()):
        if ver != "GARUDA_0.1":
            errors.append(f"{name}: version {ver!r}, expected GARUDA_0.1")
        if kind not in ("T", "W"):
            errors.append(f"{name}: symbol type {kind}, expected a function")
    for e in errors:
        print("ABI:", e)
    print(f"{len(hdr)} public functions, {len(exp)} exported, {len(errors)} problems")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
