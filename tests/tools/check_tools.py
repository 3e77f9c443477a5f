#!/usr/bin/env python3
"""check_tools.py ATTNRT_INFO ATTNRT_CONFORM ATTNRT_BENCH MAN_DIR [cpu] — what every tool owes a user:
`--version` prints one line, "<tool>: libattnrt X.Y.Z (plugin ABI M.N)", on stdout and exits 0 without
loading a plugin; `--help` names --version; each tool has a man page (MAN_DIR/<tool>.1) that names every
long option its --help lists, and renders without a warning where groff is installed. With `cpu` (the
build has the cpu plugin), attnrt-info as a script reads it (Python's json, the build tree's cpu plugin): schema_version 1, structured
refusals (cpu:0 refuses cascade with alibi or sliding_window, nothing else), and --query's answers on
cpu:0, supported and refused, as text and as JSON."""
import json
import os
import re
import shutil
import subprocess
import sys

VERSION = re.compile(r"^(attnrt-\w+): libattnrt (\d+\.\d+\.\d+) \(plugin ABI (\d+)\.(\d+)\)\n$")


def run(argv, env=None):
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False, env=env)


def check_info(info):
    """attnrt-info --json and --query on the build tree's cpu plugin alone; returns the problems found."""
    errors = []
    env = dict(os.environ, ATTNRT_PLUGIN="cpu")
    doc = json.loads(run([info, "--json"], env=env).stdout)
    if doc.get("schema_version") != 1 or doc.get("tool") != "attnrt-info":
        errors.append(f"--json: schema_version {doc.get('schema_version')!r}, tool {doc.get('tool')!r}")
    caps = doc["devices"][0]["capabilities"]
    refused = {op: c["refusals"] for op, c in caps.items() if c["refusals"]}
    cascade = refused.pop("cascade", [])
    if refused or len(cascade) != 270 or caps["cascade"]["refused"] != 270:
        errors.append(f"--json: cpu:0 refusals other than 270 of cascade: {sorted(refused)}, {len(cascade)}")
    fields = {"op", "q_dtype", "kv_dtype", "head_dim_qk", "head_dim_v", "block_size", "features", "reason"}
    for r in cascade:
        if set(r) != fields or r["op"] != "cascade" or r["features"] not in (["alibi"], ["sliding_window"]):
            errors.append(f"--json: a cascade refusal is not structured as documented: {r}")
            break
    asked = "op=paged_attention,dtype=bf16,head_dim=128,block_size=16"
    yes = run([info, "--query", asked, "--device", "cpu:0"])
    want = "supported: paged_attention q_dtype=bf16 kv_dtype=bf16 head_dim_qk=128 head_dim_v=128 block_size=16 on cpu:0\n"
    if yes.returncode != 0 or yes.stdout != want:
        errors.append(f"--query {asked}: exit {yes.returncode}, {yes.stdout!r}")
    no = run([info, "--json", "--query", "op=cascade,dtype=bf16,head_dim=128,block_size=16,features=alibi",
              "--device", "cpu:0"])
    answer = json.loads(no.stdout) if no.stdout else {}
    if no.returncode != 1 or answer.get("supported") is not False or "ALiBi" not in (answer.get("reason") or "") \
            or answer.get("query", {}).get("features") != ["alibi"] or answer.get("device") != "cpu:0":
        errors.append(f"--json --query cascade with alibi: exit {no.returncode}, {no.stdout!r}")
    return errors


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
    if sys.argv[5:] == ["cpu"]:
        errors += check_info(tools[0])
    for e in errors:
        print("check_tools:", e)
    if not errors:
        print(f"check_tools: --version and man pages of {len(tools)} tools ({'rendered' if groff else 'groff absent'})")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
