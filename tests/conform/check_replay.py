#!/usr/bin/env python3
"""check_replay.py ATTNRT_CONFORM PLUGIN_PATH — a failing case's replay line re-tests the same plugin.

Runs attnrt-conform --plugin PLUGIN_PATH --self-test-corrupt on the merge cases (every result perturbed,
so every case fails and prints a replay line), then pastes one replay line as a user would: it must name
--plugin with the path (quoted where the shell needs it), and run exactly that case on the same device.
The plugin path is reached through a folder whose name has a space and a quote, so the quoting is tested."""
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile


def run(argv):
    return subprocess.run(argv, capture_output=True, text=True, timeout=240, check=False)


def main() -> int:
    conform, plugin = sys.argv[1], sys.argv[2]
    errors = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = os.path.join(tmp, "vendor's kit")
        os.mkdir(folder)
        copy = os.path.join(folder, os.path.basename(plugin))
        shutil.copy(plugin, copy)
        first = run([conform, "--plugin", copy, "--self-test-corrupt", "--filter", "merge-", "--cases", "0"])
        device = re.search(r"device (\S+) \(plugin", first.stdout)
        replays = [line.split("replay: ", 1)[1] for line in first.stdout.splitlines() if "replay: " in line]
        if first.returncode != 1 or not device or not replays:
            print(f"the corrupted run: exit {first.returncode}\n{first.stdout}\n{first.stderr}")
            return 1
        line = replays[-1]
        words = shlex.split(line)
        if words[0] != conform or "--plugin" not in words or words[words.index("--plugin") + 1] != copy:
            errors.append(f"the replay line does not repeat --plugin {copy!r}: {line}")
        else:
            again = run(words)
            header = re.search(r"device (\S+) \(plugin", again.stdout)
            summary = again.stdout.strip().splitlines()[-1] if again.stdout.strip() else ""
            if again.returncode != 0 or not header or header.group(1) != device.group(1):
                errors.append(f"the pasted replay line ran on another device or failed: exit {again.returncode}\n"
                              f"{again.stdout}\n{again.stderr}")
            elif summary != "1 passed, 0 failed, 0 unsupported":
                errors.append(f"the pasted replay line should run its one case (uncorrupted: a pass): {summary!r}")
    for e in errors:
        print("check_replay:", e)
    if not errors:
        print(f"check_replay: '{line}' re-ran the case on {device.group(1)}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
