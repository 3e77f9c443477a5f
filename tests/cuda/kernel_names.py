#!/usr/bin/env python3
"""kernel_names.py NVCC KERNELS_DIR OUT DEPFILE -- the kernels each fatbin of the cuda plugin holds, one "family name"
line each, read from the preprocessed translation units (nvcc -E: no compile), for test_cuda_kernel_select; DEPFILE
lists the sources they include, so the list follows every kernel change."""
import os
import re
import subprocess
import sys

# each fatbin's translation unit and target (plugins/cuda/meson.build)
FAMILIES = (("attention", "fatbin_attention.cu", "sm_90"), ("decode", "attn_decode.cu", "sm_90"),
            ("mla", "fatbin_mla.cu", "sm_90"), ("linear", "linear.cu", "sm_90"), ("sm90a", "fatbin_sm90a.cu", "sm_90a"))
# a kernel after nvcc -E: extern "C" __attribute__((global)) void [__attribute__((launch_bounds(...)))] NAME(
KERNEL = re.compile(r'extern "C"\s+__attribute__\(\(global\)\)\s+void\s+'
                    r'(?:__attribute__\(\(launch_bounds\([^;{}]*?\)\)\)\s+)?(ck_\w+)\s*\(')


def main() -> int:
    nvcc, kdir, out, depfile = sys.argv[1:5]
    root = os.path.abspath(os.path.join(kdir, "..", "..", ".."))  # the repository: the toolkit's headers are not deps
    lines, deps = [], set()
    for family, tu, arch in FAMILIES:
        args = [nvcc, "-E", "-std=c++17", f"-arch={arch}", "-x", "cu", f"{kdir}/{tu}"]
        text = subprocess.run(args, check=True, capture_output=True, text=True).stdout
        lines += [f"{family} {m.group(1)}" for m in KERNEL.finditer(text)]
        paths = (os.path.abspath(p) for p in re.findall(r'^# \d+ "([^"<]+)"', text, re.M))  # the line markers' files
        deps.update(p for p in paths if p.startswith(root + os.sep))
    with open(out, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    with open(depfile, "w", encoding="utf-8") as f:
        f.write(out + ": " + " ".join(sorted(deps)) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
