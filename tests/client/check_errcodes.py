#!/usr/bin/env python3
"""check_errcodes.py REGISTRY_HEADER PUBLIC_HEADER -- the public header's error enum
(client/include/garuda/garuda.h) holds every code of the one registry (proto/errcode.h)
with the same name and number, and nothing else: it fails when someone appends a code to
the registry and forgets the header (or the other way round)."""
import re
import sys

def registry(path):
    text = open(path).read()
    rows = re.findall(r'X\(\s*([A-Z][A-Z0-9_]*)\s*,\s*(\d+)\s*,', text)
    if not rows:
        sys.exit(f'{path}: no X(NAME, number, "message") rows found: has the registry moved?')
    return {name: int(num) for name, num in rows}

def public(path):
    text = open(path).read()
    rows = re.findall(r'\bGARUDA_E_([A-Z][A-Z0-9_]*)\s*=\s*(\d+)\s*,', text)
    if not rows:
        sys.exit(f'{path}: no GARUDA_E_NAME = number entries found')
    out = {}
    for name, num in rows:
        if name in out:
            sys.exit(f'{path}: GARUDA_E_{name} defined twice')
        out[name] = int(num)
    return out

reg = registry(sys.argv[1])
pub = public(sys.argv[2])
bad = []
for name, num in sorted(reg.items(), key=lambda kv: kv[1]):
    if name not in pub:
        bad.append(f'GARUDA_E_{name} = {num} is in the registry but not in the public header')
    elif pub[name] != num:
        bad.append(f'GARUDA_E_{name} is {pub[name]} in the public header, {num} in the registry')
for name, num in pub.items():
    if name not in reg:
        bad.append(f'GARUDA_E_{name} = {num} is in the public header but not in the registry')
for line in bad:
    print(line)
if bad:
    sys.exit(1)
print(f'{len(reg)} codes agree')
