#!/usr/bin/python3
"""cdi-validate.py [--self-test] SPEC.yaml — a CDI spec checked as the CDI library does.

Two layers, both from Debian's golang-github-container-orchestrated-devices-container-
device-interface-dev (CDI_DIR, default its /usr/share/gocode source tree):
  1. the CDI JSON schema it ships (schema/schema.json, whose $refs point into
     schema/defs.json), with python3-jsonschema (Draft 7, as the schema declares);
  2. what the library's own Validate() refuses and the schema does not say
     (pkg/cdi/spec.go, qualified-device.go, container-edits.go): a cdiVersion the
     library knows (read from validSpecVersions in pkg/cdi/spec.go), kind as
     VENDOR/CLASS with its character rules, device names, unique device names, env
     entries as NAME=VALUE (the schema's env items say "ref" for "$ref", so the schema
     checks nothing there), mounts with a non-empty hostPath and containerPath.
The package is upstream v0.5.2: it knows cdiVersion up to 0.5.0, and its schema
describes the fields of spec 0.5.0. A spec declaring a newer version is refused by
that library (and by runtimes that vendor it, e.g. containerd 1.7), which is what this
check says too.

--self-test: the spec must pass, and each of a set of broken copies of it must be
refused with the expected reason (so the check cannot pass vacuously).
Exit 0 valid, 1 invalid, 77 (skip) when the schema or python3-jsonschema is missing.
"""
import copy
import json
import os
import re
import sys

CDI_DIR = os.environ.get(
    "CDI_DIR",
    "/usr/share/gocode/src/github.com/container-orchestrated-devices/container-device-interface")
PKG = "golang-github-container-orchestrated-devices-container-device-interface-dev"


def skip(why):
    print(f"SKIP: {why}")
    sys.exit(77)


try:
    import jsonschema
    import yaml
except ImportError as e:
    skip(f"{e.name} is missing (Debian python3-jsonschema, python3-yaml)")


def load_schema():
    sdir = os.path.join(CDI_DIR, "schema")
    try:
        with open(os.path.join(sdir, "schema.json")) as f:
            schema = json.load(f)
        with open(os.path.join(sdir, "defs.json")) as f:
            defs = json.load(f)
    except OSError as e:
        skip(f"no CDI schema: {e} (Debian {PKG})")
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    # schema.json refers to "defs.json#/definitions/..." and defs.json to "#/definitions/..."
    resolver = jsonschema.RefResolver(base_uri="schema.json", referrer=schema,
                                      store={"schema.json": schema, "defs.json": defs})
    return cls(schema, resolver=resolver), cls.__name__


def known_versions():
    path = os.path.join(CDI_DIR, "pkg", "cdi", "spec.go")
    try:
        with open(path) as f:
            src = f.read()
    except OSError as e:
        skip(f"no CDI library source: {e} (Debian {PKG})")
    block = re.search(r"validSpecVersions\s*=\s*map\[string\]struct\{\}\{(.*?)\n\t\}", src, re.S)
    versions = re.findall(r'"(\d+\.\d+\.\d+)"', block.group(1)) if block else []
    if not versions:  # refuse to check against nothing
        print(f"cannot find validSpecVersions in {path}")
        sys.exit(1)
    return versions


def is_alnum(c):
    return c.isascii() and c.isalnum()


def name_rule(what, s, inner):
    """pkg/cdi's rule: first a letter (vendor, class) or letter/digit (device), last a
    letter or digit, the rest letters, digits or one of inner."""
    if not s:
        return f"invalid (empty) {what}"
    first_ok = (s[0].isascii() and s[0].isalpha()) if what != "device name" else is_alnum(s[0])
    if not first_ok:
        return f"invalid {what} {s!r}: bad first character"
    for c in s[1:-1]:
        if not (is_alnum(c) or c in inner):
            return f"invalid character {c!r} in {what} {s!r}"
    if not is_alnum(s[-1]):
        return f"invalid {what} {s!r}: should end with a letter or digit"
    return None


def library_rules(spec, versions):
    errs = []
    v = spec.get("cdiVersion")
    if isinstance(v, str) and v not in versions:
        errs.append(f"cdiVersion {v!r} is not one the CDI library knows ({', '.join(versions)})")
    kind = spec.get("kind")
    if isinstance(kind, str):
        vendor, _, cls = kind.partition("/")
        if not cls:
            errs.append(f"kind {kind!r} is not VENDOR/CLASS")
        else:
            errs += filter(None, [name_rule("vendor", vendor, "_-."), name_rule("class", cls, "_-")])
    seen = set()
    edits = []
    if isinstance(spec.get("containerEdits"), dict):
        edits.append(("spec", spec["containerEdits"]))
    for d in spec.get("devices") or []:
        if not isinstance(d, dict):
            continue
        n = d.get("name")
        if isinstance(n, str):
            e = name_rule("device name", n, "_-.:")
            if e:
                errs.append(e)
            if n in seen:
                errs.append(f"device {n!r} defined twice")
            seen.add(n)
        if isinstance(d.get("containerEdits"), dict):
            edits.append((f"device {n!r}", d["containerEdits"]))
    for where, e in edits:
        for env in e.get("env") or []:
            if not isinstance(env, str) or env.find("=") <= 0:
                errs.append(f"{where}: env entry {env!r} is not NAME=VALUE")
        for m in e.get("mounts") or []:
            if isinstance(m, dict) and (not m.get("hostPath") or not m.get("containerPath")):
                errs.append(f"{where}: mount {m!r} needs a hostPath and a containerPath")
    if spec.get("devices") == []:
        errs.append("no devices")
    return errs


def check(spec, validator, versions):
    """The reasons spec is refused, schema first; [] when valid."""
    errs = [f"schema: {'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}"
            for e in sorted(validator.iter_errors(spec), key=lambda e: list(map(str, e.path)))]
    if isinstance(spec, dict):
        errs += [f"CDI library: {e}" for e in library_rules(spec, versions)]
    return errs


def report(label, errs):
    if errs:
        print(f"{label}: INVALID")
        for e in errs:
            print(f"  {e}")
    else:
        print(f"{label}: valid")


def broken_copies(spec):
    """(what is broken, the reason expected, the spec) for --self-test."""
    def mut(f):
        s = copy.deepcopy(spec)
        f(s)
        return s
    dev = lambda s: s["devices"][0]
    return [
        ("no cdiVersion", "'cdiVersion' is a required property", mut(lambda s: s.pop("cdiVersion"))),
        ("no devices", "'devices' is a required property", mut(lambda s: s.pop("devices"))),
        ("a device without a name", "'name' is a required property", mut(lambda s: dev(s).pop("name"))),
        ("a device without containerEdits", "'containerEdits' is a required property",
         mut(lambda s: dev(s).pop("containerEdits"))),
        ("mounts not a list", "is not of type 'array'",
         mut(lambda s: dev(s)["containerEdits"].__setitem__("mounts", {"hostPath": "/x"}))),
        ("a mount without containerPath", "'containerPath' is a required property",
         mut(lambda s: dev(s)["containerEdits"]["mounts"][0].pop("containerPath"))),
        ("kind a number", "is not of type 'string'", mut(lambda s: s.__setitem__("kind", 7))),
        ("env entry without =", "is not NAME=VALUE",
         mut(lambda s: dev(s)["containerEdits"]["env"].append("GARUDA_SOCKET"))),
        ("kind without a class", "is not VENDOR/CLASS", mut(lambda s: s.__setitem__("kind", "garuda.dev"))),
        ("device name with a slash", "in device name", mut(lambda s: dev(s).__setitem__("name", "so/ck"))),
        ("an unknown cdiVersion", "is not one the CDI library knows",
         mut(lambda s: s.__setitem__("cdiVersion", "9.9.9"))),
    ]


def main(argv):
    self_test = "--self-test" in argv
    paths = [a for a in argv if a != "--self-test"]
    if len(paths) != 1:
        print(__doc__)
        return 2
    validator, vname = load_schema()
    versions = known_versions()
    print(f"CDI schema {CDI_DIR}/schema/schema.json ({vname}, jsonschema "
          f"{getattr(jsonschema, '__version__', '?')}); library versions {', '.join(versions)}")
    with open(paths[0]) as f:
        spec = yaml.safe_load(f)
    errs = check(spec, validator, versions)
    report(paths[0], errs)
    if not self_test:
        return 1 if errs else 0
    bad = 1 if errs else 0
    for what, want, s in broken_copies(spec):
        e = check(s, validator, versions)
        report(f"broken copy ({what})", e)
        if not any(want in x for x in e):
            print(f"  NOT REFUSED as expected: wanted a reason containing {want!r}")
            bad = 1
    return bad


if __name__ == "__main__":
    import warnings
    warnings.simplefilter("ignore", DeprecationWarning)  # jsonschema.RefResolver, __version__
    sys.exit(main(sys.argv[1:]))
