#!/usr/bin/env python3
"""doc-paths.py ROOT — every document a shipped text points a reader to is shipped.

ROOT holds the Debian packages' files (dpkg-deb -x of each). The shipped texts are the
man pages (usr/share/man, gzipped), the Kubernetes README and files, the scripts in
/usr/libexec/garuda and the units in /lib/systemd/system. In them:
  * an absolute path under /usr/share/doc/garuda, /usr/share/garuda or
    /usr/libexec/garuda must be a file of the packages, exactly as written (so a man
    page says client.md.gz where dh_compress compressed it);
  * a document named by its file name (plans.md, docs/deploy.md) must be in
    /usr/share/doc/garuda, compressed or not;
  * a unit's Documentation= man:PAGE(N) must be a shipped man page, file:PATH a file;
  * a man page's reference to one of ours (garudad(8), garctl(1), garuda-...(N)) must
    be a shipped man page.
(Issue 30, item 16: garuda-replay(1), garudad(8), the Kubernetes README and the prolog
pointed to plans.md and deploy.md, which no package shipped.)
Prints what it checked; exit 1 naming each broken reference."""
import gzip
import os
import re
import sys

root = sys.argv[1]


def rel(path):
    return os.path.relpath(path, root)


def files_under(d):
    for dirpath, _, names in os.walk(os.path.join(root, d)):
        for n in names:
            yield os.path.join(dirpath, n)


def exists(abspath):
    return os.path.isfile(os.path.join(root, abspath.lstrip("/")))


def man_exists(name, section):
    return exists(f"/usr/share/man/man{section[0]}/{name}.{section}.gz")


def text_of(path):
    data = open(path, "rb").read()
    if path.endswith(".gz"):
        data = gzip.decompress(data)
    text = data.decode("utf-8", "replace")
    if "/usr/share/man/" in path:
        # roff: "\-" is "-", "\&" and "\:" are nothing, fonts are markup
        text = re.sub(r"\\f[BIRP]", "", text)
        text = text.replace("\\-", "-").replace("\\&", "").replace("\\:", "")
    return text


texts = [p for p in files_under("usr/share/man") if p.endswith(".gz")]
texts += [os.path.join(root, "usr/share/garuda/kubernetes/README.md")]
texts += [p for p in files_under("usr/share/garuda/kubernetes") if not p.endswith("README.md")]
texts += list(files_under("usr/libexec/garuda"))
units = [p for p in files_under("lib/systemd/system") if re.search(r"/garuda[-a-z]*\.(service|socket|timer)$", p)]
texts += units

bad, checked = [], 0
for path in texts:
    if not os.path.isfile(path):
        bad.append(f"{rel(path)}: not in the packages")
        continue
    text = text_of(path)
    for m in re.finditer(r"/usr/(?:share/doc/garuda|share/garuda|libexec/garuda)(?:/[\w.@+-]*)+", text):
        p = m.group(0).rstrip(".")
        if p.endswith("/") or os.path.isdir(os.path.join(root, p.lstrip("/"))):
            continue  # a directory: its files are checked where they are named
        checked += 1
        if not exists(p):
            bad.append(f"{rel(path)}: names {p}, which no package ships")
    for m in re.finditer(r"(?<![\w/.-])(?:docs/)?([a-z][a-z0-9_-]*\.md)\b(?!\.gz)", text):
        name = m.group(1)
        if name == "README.md":
            continue  # the Kubernetes README's own name (installed beside it)
        checked += 1
        if not (exists(f"/usr/share/doc/garuda/{name}") or exists(f"/usr/share/doc/garuda/{name}.gz")):
            bad.append(f"{rel(path)}: names {m.group(0)}, which is not in /usr/share/doc/garuda")
    if "/usr/share/man/" in path:
        for m in re.finditer(r"\b(garudad|garctl|garuda-[a-z-]+) ?\(([1-8])\)", text):
            checked += 1
            if not man_exists(m.group(1), m.group(2)):
                bad.append(f"{rel(path)}: refers to {m.group(1)}({m.group(2)}), which no package ships")
for path in units:
    for line in text_of(path).splitlines():
        if not line.startswith("Documentation="):
            continue
        for uri in line.split("=", 1)[1].split():
            checked += 1
            m = re.fullmatch(r"man:([\w.-]+)\(([1-8])\)", uri)
            if m and not man_exists(m.group(1), m.group(2)):
                bad.append(f"{rel(path)}: Documentation={uri}: no such man page in the packages")
            elif uri.startswith("file:") and not exists(uri[len("file:"):]):
                bad.append(f"{rel(path)}: Documentation={uri}: no such file in the packages")
            elif not m and not uri.startswith(("file:", "http:", "https:")):
                bad.append(f"{rel(path)}: Documentation={uri}: not a URI systemd knows")
if bad:
    print("\n".join(dict.fromkeys(bad)))
    sys.exit(1)
print(f"doc paths: {checked} references in {len(texts)} shipped texts, each shipped")
