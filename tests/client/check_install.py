#!/usr/bin/env python3
"""check_install.py — libgaruda's install rules, as a packager would see them.

Usage: check_install.py MESON BUILDDIR SOURCE_ROOT

Installs the build into a temporary DESTDIR, checks that the header, the shared library
with its soname links and garuda.pc land where they belong, then compiles and links
examples/minimal.c against the installed copy using nothing but
`pkg-config --cflags --libs garuda`; the man pages and documents are installed too.
"""
import glob
import os
import shlex
import subprocess
import sys
import tempfile


def main():
    meson, builddir, srcroot = sys.argv[1:4]
    with tempfile.TemporaryDirectory(prefix="garuda-install.") as dest:
        subprocess.run([meson, "install", "-C", builddir, "--destdir", dest, "--no-rebuild",
                        "--quiet"], check=True, stdout=subprocess.DEVNULL)
        errors = []

        def one(pattern):
            found = glob.glob(os.path.join(dest, pattern), recursive=True)
            if len(found) != 1:
                errors.append(f"{pattern}: found {found}")
                return None
            return found[0]

        header = one("**/include/garuda/garuda.h")
        real = one("**/libgaruda.so.0.1.0")
        so0 = one("**/libgaruda.so.0")
        so = one("**/libgaruda.so")
        pc = one("**/pkgconfig/garuda.pc")
        one("**/bin/garuda-ping")  # the packaged check of the client path
        for doc in ("man/man8/garudad.8", "man/man1/garctl.1", "man/man1/garuda-ping.1",
                    "doc/garuda/client.md",
                    "doc/garuda/protocol.md", "doc/garuda/garudad.json.example",
                    "bash-completion/completions/garctl"):
            one("**/share/" + doc)
        if pc and "URL:" in open(pc).read() and "github.com/garuda\n" in open(pc).read():
            errors.append("garuda.pc carries the placeholder URL")
        if so0 and os.readlink(so0) != "libgaruda.so.0.1.0":
            errors.append(f"libgaruda.so.0 -> {os.readlink(so0)}")
        if so and os.readlink(so) != "libgaruda.so.0":
            errors.append(f"libgaruda.so -> {os.readlink(so)}")
        if errors:
            print("\n".join(errors))
            return 1
        env = dict(os.environ, PKG_CONFIG_SYSROOT_DIR=dest,
                   PKG_CONFIG_PATH=os.path.dirname(pc), PKG_CONFIG_LIBDIR=os.path.dirname(pc))
        flags = subprocess.run(["pkg-config", "--cflags", "--libs", "garuda"], env=env,
                               check=True, capture_output=True, text=True).stdout
        print("pkg-config garuda:", flags.strip())
        cc = os.environ.get("CC", "cc")
        out = os.path.join(dest, "minimal")
        cmd = [cc, "-Wall", "-Wextra", "-Werror", "-o", out,
               os.path.join(srcroot, "examples", "minimal.c")] + shlex.split(flags)
        subprocess.run(cmd, check=True)
        print("compiled and linked examples/minimal.c against the installed libgaruda")
    return 0


if __name__ == "__main__":
    sys.exit(main())
