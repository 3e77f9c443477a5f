"""The ctypes mirrors against the C headers: a C compiler prints every mirrored struct's size and each
field's offset and size, and every constant; the mirrors must agree. Every versioned struct and enum
constant of the headers must have a mirror. Needs a C compiler (CC, else cc): it fails without one."""
import ctypes
import os
import re
import shutil
import subprocess

import pytest

import attnrt
from attnrt import _dlpack
from attnrt import _types as T

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
INCLUDES = [os.path.join(REPO, "abi"), os.path.join(REPO, "runtime", "include")]
HEADERS = [os.path.join(REPO, "abi", "attnrt_types.h"), os.path.join(REPO, "runtime", "include", "attnrt.h")]

# Python enum -> the C prefix of its constants.
ENUMS = {T.Status: "ATTNRT_", T.DTypeCode: "ATTNRT_DTYPE_CODE_", T.DeviceType: "ATTNRT_DEVICE_TYPE_",
         T.Op: "ATTNRT_OP_", T.Feature: "ATTNRT_FEATURE_", T.LogLevel: "ATTNRT_LOG_",
         T.FrontEnd: "ATTNRT_FRONT_END_", T.LayerKind: "ATTNRT_LAYER_", T.ModelKind: "ATTNRT_MODEL_"}
CONSTANTS = {"ATTNRT_ABI_MAJOR": T.ABI_MAJOR, "ATTNRT_ABI_MINOR": T.ABI_MINOR, "ATTNRT_NAME_MAX": T.NAME_MAX,
             "ATTNRT_ATTR_KEY_MAX": T.ATTR_KEY_MAX, "ATTNRT_ATTR_VALUE_MAX": T.ATTR_VALUE_MAX,
             "ATTNRT_MAX_DIMS": T.MAX_DIMS}
DLPACK = {"DLDevice": _dlpack.DLDevice, "DLDataType": _dlpack.DLDataType, "DLTensor": _dlpack.DLTensor,
          "DLManagedTensor": _dlpack.DLManagedTensor}


def mirrors():
    """(C type name, ctypes struct) of every mirror."""
    return [(s._c_name_, s) for s in T.STRUCTS] + list(DLPACK.items())


def c_program():
    lines = ["#include <stdio.h>", "#include <stddef.h>", "#include <dlpack/dlpack.h>", '#include "attnrt.h"',
             "int main(void) {"]
    for cname, struct in mirrors():
        lines.append('  printf("%%s %%zu\\n", "%s", sizeof(%s));' % (cname, cname))
        for field, _ in struct._fields_:
            lines.append('  printf("%%s %%zu %%zu\\n", "%s.%s", offsetof(%s, %s), sizeof(((%s *)0)->%s));' % (
                cname, field, cname, field, cname, field))
    for enum, prefix in ENUMS.items():
        for member in enum:
            name = prefix + member.name
            lines.append('  printf("%%s %%lld\\n", "%s", (long long)%s);' % (name, name))
    for name in CONSTANTS:
        lines.append('  printf("%%s %%lld\\n", "%s", (long long)%s);' % (name, name))
    lines += ["  return 0;", "}"]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def c_says(tmp_path_factory):
    cc = os.environ.get("CC") or "cc"
    if shutil.which(cc) is None:
        pytest.fail("the layout test needs a C compiler (%s not found; set CC or install gcc)" % cc)
    for header in HEADERS:
        assert os.path.exists(header), "the layout test runs from the source tree: %s is missing" % header
    d = tmp_path_factory.mktemp("layout")
    src, exe = d / "layout.c", d / "layout"
    src.write_text(c_program())
    subprocess.run([cc, "-std=c11", "-Wall", "-Werror"] + ["-I" + i for i in INCLUDES] + [str(src), "-o", str(exe)],
                   check=True, capture_output=True, text=True)
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    return {line.split(" ", 1)[0]: line.split(" ", 1)[1] for line in out.splitlines()}


@pytest.mark.parametrize("cname,struct", mirrors(), ids=[c for c, _ in mirrors()])
def test_struct_layout(c_says, cname, struct):
    assert int(c_says[cname]) == ctypes.sizeof(struct), "sizeof(%s)" % cname
    for field, _ in struct._fields_:
        offset, size = (int(x) for x in c_says["%s.%s" % (cname, field)].split())
        descr = getattr(struct, field)
        assert (descr.offset, descr.size) == (offset, size), "%s.%s: (offset, size)" % (cname, field)


def test_constants(c_says):
    for enum, prefix in ENUMS.items():
        for member in enum:
            assert int(c_says[prefix + member.name]) == int(member), prefix + member.name
    for name, value in CONSTANTS.items():
        assert int(c_says[name]) == value, name


def header_text():
    return "\n".join(open(h).read() for h in HEADERS)


def test_every_struct_is_mirrored():
    declared = set(re.findall(r"typedef struct (attnrt_\w+)\s*\{", header_text()))
    mirrored = {cname[:-2] for cname, _ in mirrors() if cname.startswith("attnrt_")}
    assert declared - mirrored == set(), "structs of the headers without a ctypes mirror"


def test_every_enum_constant_is_mirrored():
    text = header_text()
    for enum, prefix in ENUMS.items():
        names = set(re.findall(r"\b(%s[A-Z0-9_]*[A-Z0-9])\s*=" % re.escape(prefix), text))
        if enum is T.Status:  # the status enum shares its prefix with every other
            names = {n for n in names if n.startswith(("ATTNRT_OK", "ATTNRT_ERR_"))}
        for other, other_prefix in ENUMS.items():  # longer prefixes own their names
            if other is not enum and other_prefix.startswith(prefix) and len(other_prefix) > len(prefix):
                names = {n for n in names if not n.startswith(other_prefix)}
        have = {prefix + m.name for m in enum}
        assert names - have == set(), "%s lacks %s" % (enum.__name__, sorted(names - have))


def test_structs_fill_struct_size():
    for _, struct in mirrors():
        if any(f == "struct_size" for f, _ in struct._fields_):
            assert struct().struct_size == ctypes.sizeof(struct)
    assert attnrt.Tensor.make([2, 3], "f16").strides[0] == 3
