"""The library, devices, plugins, errors, logging, contexts, memory, streams, events and DLPack tensors."""
import os
import re
import subprocess
import sys
import threading

import numpy as np
import pytest

import attnrt
from attnrt import _lib

PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(attnrt.__file__)))


def test_versions():
    major, minor, patch = attnrt.version()
    assert (major, minor) >= (0, 2)
    assert attnrt.abi_version() == (attnrt.ABI_MAJOR, attnrt.ABI_MINOR)
    assert "%d.%d.%d" % (major, minor, patch) in attnrt.version_string()
    assert attnrt.status_name(attnrt.Status.ERR_BUSY) == "ATTNRT_ERR_BUSY"


def test_devices_and_plugins():
    devices = attnrt.devices()
    cpu = [d for d in devices if d.name == "cpu:0"]
    assert cpu, [d.name for d in devices]
    assert cpu[0].device_type == attnrt.DeviceType.CPU and cpu[0].compute_units >= 1
    plugins = attnrt.plugins()
    assert plugins[cpu[0].plugin].name == "cpu" and plugins[cpu[0].plugin].status == attnrt.Status.OK
    assert sum(p.device_count for p in plugins if p.status == 0) == len(devices)
    assert attnrt.default_device() in [d.name for d in devices]


def test_open_unknown_device_names_the_devices():
    with pytest.raises(attnrt.Error) as e:
        attnrt.open("nosuch:3")
    assert e.value.status == attnrt.Status.ERR_NOT_FOUND
    assert e.value.status_name == "ATTNRT_ERR_NOT_FOUND"
    assert "nosuch:3" in e.value.message and "cpu:0" in e.value.message


def test_open_with_unknown_option_names_it():
    with pytest.raises(attnrt.Error) as e:
        attnrt.open("cpu:0", options={"no_such_option": "1"})
    assert "no_such_option" in e.value.message


def test_context_info_and_close(ctx):
    assert ctx.device == "cpu:0" and ctx.device_type == attnrt.DeviceType.CPU and not ctx.is_cuda
    assert ctx.ordinal == 0
    pool = attnrt.StatePool(ctx, [4], num_slots=2)
    buf = ctx.alloc(64)
    stream = ctx.stream()
    ctx.close()  # frees what the package made on it, then closes
    ctx.close()  # twice is fine
    for use in (lambda: pool.alloc(), lambda: buf.ptr, lambda: stream.handle, lambda: ctx.alloc(8)):
        with pytest.raises(attnrt.Error):
            use()


def test_supports(ctx):
    assert ctx.supports(attnrt.Op.PAGED_ATTENTION, q_dtype="f32", head_dim_qk=64, head_dim_v=64) == (True, "")
    ok, reason = ctx.supports(attnrt.Op.PAGED_ATTENTION, q_dtype="fp8_e4m3", head_dim_qk=64)
    assert not ok and "dtype" in reason
    with pytest.raises(attnrt.Error) as e:
        ctx.supports(99)
    assert "99" in e.value.message


def test_select_attention_and_stats(ctx):
    sel = ctx.select_attention(block_size=32, head_dim=128, max_model_len=4096)
    assert sel["kernel"] == "paged" and sel["block_size"] == 32
    with pytest.raises(attnrt.Error) as e:
        ctx.last_op_stats()
    assert e.value.status == attnrt.Status.ERR_UNSUPPORTED


# ---- library loading -----------------------------------------------------------------------------------

def run_python(code, **env):
    full = dict(os.environ, PYTHONPATH=PACKAGE_DIR, **env)
    full = {k: v for k, v in full.items() if v is not None}
    return subprocess.run([sys.executable, "-c", code], env=full, capture_output=True, text=True, timeout=60)


def test_bad_library_path_fails_at_first_use():
    code = ("import attnrt\n"
            "try:\n    attnrt.devices()\nexcept attnrt.Error as e:\n    print(e.status, e)\n")
    r = run_python(code, ATTNRT_LIBRARY="/nonexistent/libattnrt.so")
    assert r.returncode == 0, r.stderr
    assert "-4 ATTNRT_ERR_NOT_FOUND" in r.stdout and "ATTNRT_LIBRARY=/nonexistent/libattnrt.so" in r.stdout


def test_library_found_through_the_dynamic_loader():
    """Without ATTNRT_LIBRARY the package asks the dynamic loader for libattnrt.so.0."""
    lib_dir = os.path.dirname(os.path.abspath(_lib.library_path()))
    env = dict(ATTNRT_LIBRARY="", LD_LIBRARY_PATH=lib_dir)
    r = run_python("import attnrt; print(attnrt.library_path()); print([d.name for d in attnrt.devices()])", **env)
    assert r.returncode == 0, r.stderr
    assert "cpu:0" in r.stdout


def test_missing_symbol_is_named(monkeypatch):
    monkeypatch.setitem(_lib._SIGNATURES, "attnrt_not_a_function", (None, []))
    with pytest.raises(attnrt.Error) as e:
        _lib.function("attnrt_not_a_function")
    assert e.value.status == attnrt.Status.ERR_NOT_FOUND and "attnrt_not_a_function" in e.value.message
    assert not attnrt.has_symbol("attnrt_not_a_function")


def test_meson_installs_every_module():
    listed = set(re.findall(r"'attnrt/(\w+\.py)'", open(os.path.join(PACKAGE_DIR, "meson.build")).read()))
    present = {f for f in os.listdir(os.path.join(PACKAGE_DIR, "attnrt")) if f.endswith(".py")}
    assert listed == present, "python/meson.build's install_sources and python/attnrt/*.py differ"


def test_every_declared_function_is_exported():
    """The package's signatures are the library's (runs once the library has ABI 2.0's functions)."""
    missing = [name for name in _lib._SIGNATURES if not attnrt.has_symbol(name)]
    assert not missing, "not exported by %s: %s" % (_lib.library_path(), ", ".join(missing))


# ---- logging --------------------------------------------------------------------------------------------

def test_log_callback():
    lines = []
    attnrt.set_log_callback(lambda level, line: lines.append((level, line, threading.get_ident())))
    try:
        attnrt.set_log_level("debug")
        with pytest.raises(attnrt.Error):
            attnrt.open("nosuch:0")
        assert any(level == attnrt.LogLevel.DEBUG and "nosuch:0" in line for level, line, _ in lines), lines
    finally:
        attnrt.set_log_callback(None)
        attnrt.set_log_level(attnrt.LogLevel.WARN)
    count = len(lines)
    with pytest.raises(attnrt.Error):
        attnrt.open("nosuch:1")
    assert len(lines) == count  # restored: nothing reaches the old sink


def test_log_level_out_of_range():
    with pytest.raises(attnrt.Error) as e:
        attnrt.set_log_level(7)
    assert e.value.status == attnrt.Status.ERR_INVALID_ARGUMENT and "7" in e.value.message


# ---- memory, streams, events ---------------------------------------------------------------------------

def test_device_buffer_round_trip(ctx, rng):
    src = rng.standard_normal(32).astype(np.float32)
    with ctx.alloc(src.nbytes) as buf:
        buf.fill(0)
        back = np.full(32, np.nan, np.float32)
        buf.copy_to_host(back)
        assert not back.any()
        buf.copy_from_host(src)
        buf.copy_to_host(back)
        assert np.array_equal(back, src)
        t = buf.tensor([4, 8], "f32")
        assert t.data == buf.ptr and list(t.shape[:2]) == [4, 8] and list(t.strides[:2]) == [8, 1]


def test_alloc_refuses_huge(ctx):
    with pytest.raises(attnrt.Error) as e:
        ctx.alloc(1 << 60)
    assert e.value.status in (attnrt.Status.ERR_OUT_OF_MEMORY, attnrt.Status.ERR_INVALID_ARGUMENT)


def test_streams_and_events(ctx):
    s1, s2 = ctx.stream(), ctx.stream()
    start = s1.record()
    end = ctx.event()
    end.record(s1)
    end.synchronize()
    assert end.elapsed_ms(end) == 0.0 or end.elapsed_ms(end) >= 0.0
    assert start.elapsed_ms(end) >= 0.0
    s2.wait(end)  # later work on s2 orders after s1's
    s2.synchronize()
    ctx.synchronize()
    for obj in (s1, s2, start, end):
        obj.close()


def test_cpu_has_no_native_streams(ctx):
    """cpu work completes within each call: wrapping a native stream is refused, as the header says."""
    with pytest.raises(attnrt.Error) as e:
        ctx.wrap_stream(0x1234)
    assert e.value.status == attnrt.Status.ERR_UNSUPPORTED


def test_stream_argument_types(ctx):
    with pytest.raises(TypeError, match="stream"):
        attnrt.kv_write(ctx, *[np.zeros((1, 1, 8), np.float32)] * 2, np.zeros(1, np.int64),
                        *[np.zeros((1, 4, 1, 8), np.float32)] * 2, stream="default")


# ---- DLPack tensors -------------------------------------------------------------------------------------

def test_tensor_from_numpy_views(ctx):
    base = np.arange(48, dtype=np.float32).reshape(2, 3, 8)
    view = base[:, 1:, ::2]  # an offset into the buffer and strided dims
    t, keep = ctx.tensor(view)
    assert t.dtype == attnrt.float32 and t.ndim == 3
    assert list(t.shape[:3]) == [2, 2, 4] and list(t.strides[:3]) == [24, 8, 2]
    assert t.data == view.ctypes.data
    t, keep = ctx.tensor(np.array(3.0, np.float32))  # 0-d reads as [1]
    assert t.ndim == 1 and t.shape[0] == 1
    t, keep = ctx.tensor(np.zeros((2, 4), np.uint8), dtype="fp8_e5m2")
    assert t.dtype == attnrt.float8_e5m2


def test_tensor_refusals(ctx):
    with pytest.raises(attnrt.Error) as e:  # negative strides
        ctx.tensor(np.arange(5, dtype=np.float32)[::-1])
    assert e.value.status == attnrt.Status.ERR_INVALID_ARGUMENT and "stride" in e.value.message
    with pytest.raises(attnrt.Error) as e:  # a dtype libattnrt does not know
        ctx.tensor(np.zeros(4, np.float64))
    assert e.value.status == attnrt.Status.ERR_INVALID_ARGUMENT
    with pytest.raises(attnrt.Error, match="element sizes differ"):
        ctx.tensor(np.zeros(4, np.float32), dtype="bf16")
    with pytest.raises(TypeError, match="__dlpack__"):
        ctx.tensor([1.0, 2.0])


def test_dtypes():
    assert attnrt.dtype("bf16") == attnrt.bfloat16 and attnrt.dtype(np.float16) == attnrt.float16
    assert attnrt.dtype(np.dtype("int32")) == attnrt.int32 and attnrt.dtype("float8_e4m3fn") == attnrt.float8_e4m3fn
    assert attnrt.float8_e4m3fn.code == 10 and attnrt.float8_e5m2.code == 12 and attnrt.bfloat16.code == 4
    assert [attnrt.dtype(n).name for n in ("f32", "f16", "bf16", "fp8_e4m3", "fp8_e5m2", "i32", "i64", "u8", "bool")] \
        == [_lib.text(_lib.function("attnrt_dtype_name")(attnrt.dtype(n))) for n in
            ("f32", "f16", "bf16", "fp8_e4m3", "fp8_e5m2", "i32", "i64", "u8", "bool")]
    with pytest.raises(ValueError, match="f64|float64"):
        attnrt.dtype("float64")
