#!/usr/bin/env python3
"""Make a release's npm packages (npm/README.md describes them):

    dist/npm_pack.py VERSION OUT x86_64=BINARY aarch64=BINARY

writes, with `npm pack`, into OUT:

    precompress-cli-VERSION.tgz               @precompress/cli: launcher, API, plugins
    precompress-cli-linux-x64-VERSION.tgz     @precompress/cli-linux-x64: the x86_64 program
    precompress-cli-linux-arm64-VERSION.tgz   @precompress/cli-linux-arm64: the aarch64 program

The main package is npm/cli/ as committed, with the version set and the
platform packages as optional dependencies at exactly that version. A
platform package is made here: package.json (os, cpu, preferUnplugged; no
libc field, the programs being static; no install script), the program as
bin/precompress (0755), LICENSE and a short README. `npm pack` sets every
entry's time to its own constant, so the tarballs depend only on the files
and on npm's version.
"""
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# release architecture -> Node's process.arch
ARCHES = {"x86_64": "x64", "aarch64": "arm64"}
REPO = {"type": "git", "url": "git+https://github.com/precompress/precompress.git"}

PLATFORM_README = """# {name}

The static `precompress` program for Linux {arch} (glibc or musl: it needs
no shared library), as `bin/precompress`. It is an optional dependency of
[`@precompress/cli`](https://www.npmjs.com/package/@precompress/cli), which
runs it; install that package, not this one.

Version {version}; the same program as the release's
`precompress-{version}-linux-{march}.tar.gz`.
"""


def die(msg):
    sys.stderr.write("npm_pack.py: %s\n" % msg)
    sys.exit(1)


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")


def npm_pack(src, out):
    p = subprocess.run(["npm", "pack", "--json", "--ignore-scripts", "--pack-destination", out],
                       cwd=src, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        die("npm pack %s failed:\n%s" % (src, p.stderr))
    info = json.loads(p.stdout)[0]
    return info["filename"], sorted(f["path"] for f in info["files"])


def platform_package(stage, version, march, binary):
    arch = ARCHES[march]
    name = "@precompress/cli-linux-%s" % arch
    d = os.path.join(stage, "cli-linux-" + arch)
    os.makedirs(os.path.join(d, "bin"))
    shutil.copyfile(binary, os.path.join(d, "bin", "precompress"))
    os.chmod(os.path.join(d, "bin", "precompress"), 0o755)
    shutil.copyfile(os.path.join(ROOT, "LICENSE"), os.path.join(d, "LICENSE"))
    with open(os.path.join(d, "README.md"), "w") as f:
        f.write(PLATFORM_README.format(name=name, arch=arch, version=version, march=march))
    write_json(os.path.join(d, "package.json"), {
        "name": name,
        "version": version,
        "description": "The precompress program for Linux %s (static), run by @precompress/cli" % arch,
        "license": "MIT",
        "repository": dict(REPO, directory="npm"),
        "os": ["linux"],
        "cpu": [arch],
        "preferUnplugged": True,
        "files": ["bin/precompress"],
    })
    return name, d


def main_package(stage, version, platforms):
    d = os.path.join(stage, "cli")
    shutil.copytree(os.path.join(ROOT, "npm", "cli"), d)
    shutil.copyfile(os.path.join(ROOT, "LICENSE"), os.path.join(d, "LICENSE"))
    with open(os.path.join(d, "package.json")) as f:
        pkg = json.load(f)
    pkg["version"] = version
    pkg["optionalDependencies"] = {name: version for name in sorted(platforms)}
    write_json(os.path.join(d, "package.json"), pkg)
    os.chmod(os.path.join(d, "bin", "precompress.js"), 0o755)
    return d


def main(argv):
    if len(argv) < 3:
        die("usage: dist/npm_pack.py VERSION OUT ARCH=BINARY...")
    version, out = argv[0], os.path.abspath(argv[1])
    binaries = {}
    for a in argv[2:]:
        march, _, binary = a.partition("=")
        if march not in ARCHES or not os.path.isfile(binary):
            die("not ARCH=BINARY (ARCH: %s): %s" % (", ".join(ARCHES), a))
        binaries[march] = os.path.abspath(binary)
    os.makedirs(out, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="precompress-npm.") as stage:
        platforms = {}
        for march, binary in sorted(binaries.items()):
            name, d = platform_package(stage, version, march, binary)
            platforms[name] = d
        made = []
        for name, d in sorted(platforms.items()):
            filename, files = npm_pack(d, out)
            if files != ["LICENSE", "README.md", "bin/precompress", "package.json"]:
                die("%s holds %s" % (name, files))
            made.append(filename)
        filename, files = npm_pack(main_package(stage, version, platforms), out)
        for need in ("bin/precompress.js", "index.js", "index.mjs", "index.d.ts", "index.d.mts", "vite.js",
                     "vite.mjs", "vite.d.ts", "vite.d.mts", "rollup.js", "rollup.mjs", "rollup.d.ts",
                     "rollup.d.mts", "plugin-types.d.ts", "lib/args.js", "lib/binary.js", "lib/plugin.js",
                     "LICENSE", "README.md", "package.json"):
            if need not in files:
                die("@precompress/cli lacks %s" % need)
        made.append(filename)
    for m in made:
        print(os.path.join(out, m))


if __name__ == "__main__":
    main(sys.argv[1:])
