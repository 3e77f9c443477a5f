#!/usr/bin/env python3
"""check_tools.py ATTNRT_INFO ATTNRT_CONFORM ATTNRT_BENCH MAN_DIR — what every tool owes a user:
`--version` prints one line, "<tool>: libattnrt X.Y.Z (plugin ABI M.N)", on stdout and exits 0 without
loading a plugin; `--help` names --version; each tool has a man page (MAN_DIR/<tool>.1) that names every
long option its --help lists, and renders without a warning where groff is installed."""
import os
import re
import shutil
import subprocess
import sys

VERSION = re.compile(r"^(attnrt-\w+): libattnrt (\d+\.\d+\.\d+) \(plugin ABI (\d+)\.(\d+)\)\n$")


def run(argv, env=None):
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False, env=env)


def main() -> int:
    tools, man_dir = sys.argv[1:4], sys.argv[4]
    errors, versions = [], set()
    groff = shutil.which("groff")
    # a plugin that cannot load would make any probing run fail: --version must not probe
    env = dict(os.environ, ATTNRT_PLUGIN="/nonexistent/attnrt_x.so")
    for tool in tools:
        name = os.path.basename(tool)
        v = run([tool, "--version"], env=env)
        m = VERSION.match(v.stdout)
        if v.returncode != 0 or v.stderr or not m or m.group(1) != name:
            errors.append(f"{name} --version: exit {v.returncode}, stdout {v.stdout!r}, stderr {v.stderr!r}")
        else:
            versions.add(m.groups()[1:])
        h = run([tool, "--help"])
        if h.returncode != 0 or "--version" not in h.stdout:
            errors.append(f"{name} --help does not name --version (exit {h.returncode})")
        page = os.path.join(man_dir, name + ".1")
        if not os.path.isfile(page):
            errors.append(f"no man page {page}")
            continue
        with open(page, encoding="utf-8") as f:
            text = f.read()
        title = name.upper().replace("-", r"\-")
        if not re.search(rf'^\.TH "?{re.escape(title)}"? 1 ', text, re.M):
            errors.append(f"{page}: no '.TH {name.upper()} 1' line")
        # every long option of --help, as roff writes it (\- for each hyphen)
        for option in sorted(set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", h.stdout))):
            if option.replace("-", r"\-") not in text:
                errors.append(f"{page} does not document {option}")
        if groff:
            g = run([groff, "-man", "-Tutf8", "-ww", "-z", page])
            if g.returncode != 0 or g.stderr.strip():
                errors.append(f"groff warns about {page}:\n{g.stderr}")
    if len(versions) > 1:
        errors.append(f"the tools report different versions: {versions}")
    for e in errors:
        print("check_tools:", e)
    if not errors:
        print(f"check_tools: --version and man pages of {len(tools)} tools ({'rendered' if groff else 'groff absent'})")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
