#!/usr/bin/env python3
"""attnrt-info on the skeleton plugin alone: loaded by absolute path, its device listed and usable,
merge_states supported, every other op refused with the plugin's reason.
usage: check_info.py ATTNRT_INFO PLUGIN_PATH"""
import json
import os
import subprocess
import sys


def main() -> int:
    info, plugin = sys.argv[1], sys.argv[2]
    env = dict(os.environ, ATTNRT_PLUGIN=plugin, ATTNRT_PLUGIN_PATH="", ATTNRT_DEVICE="")
    out = subprocess.run([info, "--json"], env=env, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        print(f"attnrt-info exited {out.returncode}:\n{out.stdout}\n{out.stderr}")
        return 1
    doc = json.loads(out.stdout)
    errors = []
    plugins = doc["plugins"]
    if [(p["name"], p["loaded"]) for p in plugins] != [("skeleton", True)]:
        errors.append(f"plugins: {plugins}")
    devices = doc["devices"]
    if len(devices) != 1 or devices[0]["name"] != "skeleton:0" or not devices[0]["usable"]:
        errors.append(f"devices: {[(d['name'], d['usable'], d['open_error']) for d in devices]}")
    else:
        caps = devices[0]["capabilities"]
        merge, attention = caps["merge_states"], caps["paged_attention"]
        if merge["supported"] == 0:
            errors.append(f"merge_states: {merge}")
        if attention["supported"] != 0 or "merge_states only" not in attention["refusals"][0]["reason"]:
            errors.append(f"paged_attention: {attention}")
    for e in errors:
        print("check_info:", e)
    if not errors:
        print(f"check_info: {plugin}: skeleton:0 usable; merge_states {caps['merge_states']['supported']} of "
              f"{caps['merge_states']['total']} combinations, every other op refused")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
