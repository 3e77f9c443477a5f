#!/usr/bin/env python3
"""check_vendor_plugin.py SOURCE ABI_DIR CC MESON ATTNRT_CONFORM ATTNRT_INFO — the out-of-tree example
plugin (examples/vendor_plugin) built as a vendor builds it, before anything is installed.

A copy of SOURCE is configured as a Meson project of its own with PKG_CONFIG_PATH pointing at a
hand-written attnrt-plugin.pc whose only flag is -I ABI_DIR (the source tree's plugin headers, as the
installed .pc points at $includedir/attnrt). Then: the built module needs no libattnrt and exports only
attnrt_plugin_get_api; `attnrt-conform --plugin <it> --min-passed $(cat min_passed.txt)` exits 0 with
exactly that many passes (so the file stays true) and no failure, every unsupported case refused with
the plugin's reason; attnrt-info sees hostdev:0, supports every f32 kv_write and merge_states
combination of its grid, and answers --query on it."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile


def run(argv, env=None, cwd=None):
    return subprocess.run(argv, capture_output=True, text=True, timeout=280, check=False, env=env, cwd=cwd)


def must(p, what):
    if p.returncode != 0:
        sys.exit(f"{what}: exit {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


def main() -> int:
    source, abi, cc, meson, conform, info = sys.argv[1:7]
    errors = []
    with tempfile.TemporaryDirectory() as tmp:
        pc = os.path.join(tmp, "pkgconfig")
        os.mkdir(pc)
        with open(os.path.join(pc, "attnrt-plugin.pc"), "w", encoding="utf-8") as f:
            f.write("Name: attnrt-plugin\nDescription: libattnrt plugin headers (uninstalled, for this test)\n"
                    f"Version: 0.0.0\nCflags: -I{abi}\n")
        src = os.path.join(tmp, "vendor_plugin")
        shutil.copytree(source, src)
        build = os.path.join(tmp, "build")
        env = dict(os.environ, PKG_CONFIG_PATH=pc, CC=cc)
        for var in ("CFLAGS", "LDFLAGS", "ASAN_OPTIONS", "UBSAN_OPTIONS", "LD_PRELOAD"):
            env.pop(var, None)
        must(run([meson, "setup", build, src, "-Dwerror=true"], env=env), "meson setup of the example")
        must(run([meson, "compile", "-C", build], env=env), "meson compile of the example")
        module = os.path.join(build, "attnrt_hostdev.so")
        if not os.path.isfile(module):
            return print(f"check_vendor_plugin: {module} was not built") or 1

        needed = must(run(["readelf", "-d", module]), "readelf -d")
        if "libattnrt" in needed.stdout:
            errors.append(f"the plugin links libattnrt:\n{needed.stdout}")
        symbols = must(run(["nm", "-D", "--defined-only", module]), "nm -D")
        exported = sorted(line.split()[-1] for line in symbols.stdout.splitlines() if line.strip())
        if exported != ["attnrt_plugin_get_api"]:
            errors.append(f"exported symbols: {exported}; only attnrt_plugin_get_api should be")

        with open(os.path.join(source, "min_passed.txt"), encoding="utf-8") as f:
            min_passed = f.read().strip()
        out = run([conform, "--plugin", module, "--min-passed", min_passed])
        summary = re.search(r"^(\d+) passed, (\d+) failed, (\d+) unsupported$", out.stdout, re.M)
        if out.returncode != 0 or not summary:
            errors.append(f"attnrt-conform --min-passed {min_passed}: exit {out.returncode}\n{out.stdout[-3000:]}"
                          f"\n{out.stderr}")
        else:
            passed, failed, unsupported = (int(x) for x in summary.groups())
            if passed != int(min_passed) or failed:
                errors.append(f"{passed} passed, {failed} failed: min_passed.txt says {min_passed}; update it "
                              "with the plugin")
            lines = out.stdout.splitlines()
            reasons = [lines[i + 1].strip() for i, line in enumerate(lines) if line.startswith("unsupported")]
            unnamed = [r for r in reasons if "hostdev" not in r]
            if len(reasons) != unsupported or unnamed:
                errors.append(f"unsupported cases without the plugin's reason: {unnamed[:3]}")

        ienv = dict(os.environ, ATTNRT_PLUGIN=module)
        doc = json.loads(must(run([info, "--json"], env=ienv), "attnrt-info --json").stdout)
        devices = [d for d in doc["devices"] if d["usable"]]
        if [d["name"] for d in devices] != ["hostdev:0"]:
            errors.append(f"attnrt-info devices: {[d['name'] for d in doc['devices']]}")
        else:
            caps = devices[0]["capabilities"]
            for op in ("kv_write", "merge_states"):
                wrongly = [r for r in caps[op]["refusals"] if r["q_dtype"] == "f32" and r["kv_dtype"] == "f32"]
                if wrongly or caps[op]["supported"] != 3 * 3 * 6:
                    errors.append(f"{op}: {caps[op]['supported']} supported; f32 refused: {wrongly[:2]}")
            attention = caps["paged_attention"]
            if attention["supported"] or any("kv_write and merge_states only" not in r["reason"]
                                             for r in attention["refusals"]):
                errors.append(f"paged_attention: {attention['supported']} supported, reasons {attention['reasons']}")
        yes = run([info, "--query", "op=kv_write,dtype=f32,head_dim=128,block_size=16,features=layout_hnd",
                   "--device", "hostdev:0"], env=ienv)
        no = run([info, "--query", "op=kv_write,q_dtype=f32,kv_dtype=fp8_e4m3", "--device", "hostdev:0"], env=ienv)
        if yes.returncode != 0 or not yes.stdout.startswith("supported: kv_write"):
            errors.append(f"--query f32 kv_write: exit {yes.returncode}: {yes.stdout}{yes.stderr}")
        if no.returncode != 1 or "f32 caches only (asked: f32 into fp8_e4m3)" not in no.stdout:
            errors.append(f"--query fp8 kv_write: exit {no.returncode}: {no.stdout}{no.stderr}")
    for e in errors:
        print("check_vendor_plugin:", e)
    if not errors:
        print(f"check_vendor_plugin: built out of tree, no libattnrt, one export; {min_passed} cases passed, the rest "
              "refused with its reasons; attnrt-info and --query agree")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
