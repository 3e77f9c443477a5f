"""Finding libattnrt, its function signatures, and turning a failed status into attnrt.Error.

The library is loaded at the first call, not at import, so `import attnrt` works on a machine without it;
each symbol is looked up when first used, so a library older than this package fails only the calls it
lacks, with an Error naming the symbol.
"""
import ctypes
import ctypes.util
import os
import threading
from ctypes import POINTER, c_char_p, c_int, c_int32, c_int64, c_size_t, c_uint32, c_void_p

from . import _types as T

c_status = c_int32
_pp = POINTER(c_void_p)

# name: (restype, argtypes); opaque handles (contexts, plans, streams, ...) are void pointers.
_SIGNATURES = {
    "attnrt_version": (None, [POINTER(c_int), POINTER(c_int), POINTER(c_int)]),
    "attnrt_abi_version": (None, [POINTER(c_uint32), POINTER(c_uint32)]),
    "attnrt_version_string": (c_char_p, []),
    "attnrt_status_name": (c_char_p, [c_status]),
    "attnrt_last_error": (c_char_p, []),
    "attnrt_log_set_callback": (c_status, [c_void_p, c_void_p]),
    "attnrt_log_set_level": (c_status, [c_uint32]),
    "attnrt_init": (c_status, []),
    "attnrt_shutdown": (c_status, []),
    "attnrt_plugin_count": (c_status, [POINTER(c_uint32)]),
    "attnrt_plugin_get_info": (c_status, [c_uint32, POINTER(T.PluginInfo)]),
    "attnrt_device_count": (c_status, [POINTER(c_uint32)]),
    "attnrt_device_get_properties": (c_status, [c_uint32, POINTER(T.DeviceProperties)]),
    "attnrt_device_get_attribute": (c_status, [c_uint32, c_uint32, POINTER(T.DeviceAttribute)]),
    "attnrt_device_get_plugin": (c_status, [c_uint32, POINTER(c_uint32)]),
    "attnrt_device_find": (c_status, [c_char_p, POINTER(c_uint32)]),
    "attnrt_device_default": (c_status, [POINTER(c_uint32)]),
    "attnrt_open": (c_status, [c_char_p, _pp]),
    "attnrt_open_with_options": (c_status, [c_char_p, POINTER(T.DeviceAttribute), c_uint32, _pp]),
    "attnrt_close": (c_status, [c_void_p]),
    "attnrt_context_device_name": (c_char_p, [c_void_p]),
    "attnrt_mem_alloc": (c_status, [c_void_p, c_size_t, _pp]),
    "attnrt_mem_free": (c_status, [c_void_p, c_void_p]),
    "attnrt_mem_copy_to_device": (c_status, [c_void_p, c_void_p, c_void_p, c_size_t, c_void_p]),
    "attnrt_mem_copy_to_host": (c_status, [c_void_p, c_void_p, c_void_p, c_size_t, c_void_p]),
    "attnrt_mem_copy_on_device": (c_status, [c_void_p, c_void_p, c_void_p, c_size_t, c_void_p]),
    "attnrt_mem_set": (c_status, [c_void_p, c_void_p, c_int, c_size_t, c_void_p]),
    "attnrt_stream_create": (c_status, [c_void_p, _pp]),
    "attnrt_stream_destroy": (c_status, [c_void_p]),
    "attnrt_stream_synchronize": (c_status, [c_void_p, c_void_p]),
    "attnrt_stream_wrap": (c_status, [c_void_p, c_void_p, _pp]),
    "attnrt_stream_native": (c_status, [c_void_p, c_void_p, _pp]),
    "attnrt_stream_wait_event": (c_status, [c_void_p, c_void_p]),
    "attnrt_event_create": (c_status, [c_void_p, _pp]),
    "attnrt_event_destroy": (c_status, [c_void_p]),
    "attnrt_event_record": (c_status, [c_void_p, c_void_p]),
    "attnrt_event_elapsed_ms": (c_status, [c_void_p, c_void_p, POINTER(ctypes.c_float)]),
    "attnrt_event_synchronize": (c_status, [c_void_p]),
    "attnrt_event_wrap": (c_status, [c_void_p, c_void_p, _pp]),
    "attnrt_event_native": (c_status, [c_void_p, _pp]),
    "attnrt_op_supported": (c_status, [c_void_p, POINTER(T.OpQuery), c_char_p, c_size_t]),
    "attnrt_device_op_supported": (c_status, [c_uint32, POINTER(T.OpQuery), c_char_p, c_size_t]),
    "attnrt_op_name": (c_char_p, [c_uint32]),
    "attnrt_tensor_init": (c_status, [POINTER(T.Tensor), c_void_p, T.DType, c_int32, POINTER(c_int64)]),
    "attnrt_tensor_from_dlpack": (c_status, [c_void_p, c_void_p, POINTER(T.Tensor)]),
    "attnrt_dtype_size": (c_size_t, [T.DType]),
    "attnrt_dtype_name": (c_char_p, [T.DType]),
    "attnrt_kv_write": (c_status, [c_void_p, POINTER(T.KvWriteArgs), c_void_p]),
    "attnrt_attention_plan": (c_status, [c_void_p, POINTER(T.AttentionArgs), POINTER(T.BatchHost), _pp]),
    "attnrt_attention_plan_capacity": (c_status, [c_void_p, POINTER(T.AttentionArgs), POINTER(T.Capacity), _pp]),
    "attnrt_plan_update": (c_status, [c_void_p, POINTER(T.BatchHost), c_void_p]),
    "attnrt_plan_workspace_size": (c_status, [c_void_p, POINTER(c_size_t)]),
    "attnrt_plan_destroy": (c_status, [c_void_p]),
    "attnrt_attention_run": (c_status, [c_void_p, POINTER(T.AttentionArgs), c_void_p, c_size_t, c_void_p]),
    "attnrt_merge_states": (c_status, [c_void_p, POINTER(T.MergeArgs), c_void_p]),
    "attnrt_cascade_plan": (c_status, [c_void_p, POINTER(T.CascadeArgs), POINTER(T.CascadeHost), _pp]),
    "attnrt_cascade_run": (c_status, [c_void_p, POINTER(T.CascadeArgs), c_void_p, c_size_t, c_void_p]),
    "attnrt_select_attention": (c_status, [c_void_p, POINTER(T.AttentionConfig), POINTER(T.AttentionSelection)]),
    "attnrt_last_op_stats": (c_status, [c_void_p, POINTER(T.OpStats)]),
    "attnrt_state_pool_create": (c_status, [c_void_p, T.DType, c_int32, POINTER(c_int64), c_int32, _pp]),
    "attnrt_state_pool_destroy": (c_status, [c_void_p]),
    "attnrt_state_pool_tensor": (c_status, [c_void_p, POINTER(T.Tensor)]),
    "attnrt_state_pool_usage": (c_status, [c_void_p, POINTER(c_int32), POINTER(c_int32)]),
    "attnrt_state_slot_alloc": (c_status, [c_void_p, POINTER(c_int32)]),
    "attnrt_state_slot_free": (c_status, [c_void_p, c_int32]),
    "attnrt_state_slot_zero": (c_status, [c_void_p, c_int32, c_void_p]),
    "attnrt_state_slot_copy": (c_status, [c_void_p, c_int32, c_int32, c_void_p]),
    "attnrt_mla_plan": (c_status, [c_void_p, POINTER(T.MlaArgs), POINTER(T.BatchHost), _pp]),
    "attnrt_mla_run": (c_status, [c_void_p, POINTER(T.MlaArgs), c_void_p, c_size_t, c_void_p]),
    "attnrt_lightning_plan": (c_status, [c_void_p, POINTER(T.LightningArgs), POINTER(T.BatchHost),
                                         POINTER(T.StateHost), c_void_p, _pp]),
    "attnrt_lightning_run": (c_status, [c_void_p, POINTER(T.LightningArgs), c_void_p, c_size_t, c_void_p]),
    "attnrt_gated_delta_plan": (c_status, [c_void_p, POINTER(T.GatedDeltaArgs), POINTER(T.BatchHost),
                                           POINTER(T.StateHost), c_void_p, _pp]),
    "attnrt_gated_delta_run": (c_status, [c_void_p, POINTER(T.GatedDeltaArgs), c_void_p, c_size_t, c_void_p]),
}


class Error(Exception):
    """A libattnrt call failed: `status` (an attnrt.Status), `status_name` and the library's `message`."""

    def __init__(self, status, message):
        self.status = int(status)
        try:
            self.status_name = "ATTNRT_" + T.Status(self.status).name
        except ValueError:
            self.status_name = "ATTNRT_ERR_UNKNOWN"
        self.message = message
        super().__init__(status, message)

    def __str__(self):
        return "%s: %s" % (self.status_name, self.message)


_lock = threading.Lock()
_lib = None
_lib_path = None
_functions = {}


def _candidates():
    """Where to look, in order: ATTNRT_LIBRARY alone when set, else the dynamic loader's names."""
    explicit = os.environ.get("ATTNRT_LIBRARY")
    if explicit:
        return [explicit], "ATTNRT_LIBRARY=%s" % explicit
    names = []
    found = ctypes.util.find_library("attnrt")
    if found:
        names.append(found)
    if "libattnrt.so.0" not in names:
        names.append("libattnrt.so.0")
    return names, None


def library():
    """The loaded libattnrt (a ctypes.CDLL); loads it on first use."""
    global _lib, _lib_path
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is not None:
            return _lib
        names, explicit = _candidates()
        failures = []
        for name in names:
            try:
                lib = ctypes.CDLL(name)
            except OSError as e:
                failures.append("%s: %s" % (name, e))
                continue
            _lib_path = name
            _lib = lib
            return lib
        if explicit:
            raise Error(T.Status.ERR_NOT_FOUND, "cannot load libattnrt from %s (%s); set ATTNRT_LIBRARY to the full "
                        "path of libattnrt.so" % (explicit, "; ".join(failures)))
        raise Error(T.Status.ERR_NOT_FOUND, "cannot load libattnrt: tried %s through the dynamic loader; set "
                    "ATTNRT_LIBRARY to the full path of libattnrt.so, or install libattnrt where the loader finds "
                    "it (ldconfig, LD_LIBRARY_PATH)" % "; ".join(failures))


def library_path():
    """The name or path the library was loaded from (loads it)."""
    library()
    return _lib_path


def function(name):
    """The C function `name` with its signature; Error(ERR_NOT_FOUND) when the library lacks it."""
    fn = _functions.get(name)
    if fn is not None:
        return fn
    lib = library()
    try:
        fn = getattr(lib, name)
    except AttributeError:
        raise Error(T.Status.ERR_NOT_FOUND, "%s is not in %s: this libattnrt is older than the attnrt package "
                    "(which needs ABI %d.%d); use a matching library" % (name, _lib_path, T.ABI_MAJOR, T.ABI_MINOR)) \
            from None
    restype, argtypes = _SIGNATURES[name]
    fn.restype = restype
    fn.argtypes = argtypes
    _functions[name] = fn
    return fn


def has(name):
    """Whether the loaded library exports `name`."""
    try:
        function(name)
        return True
    except Error:
        return False


def last_error():
    msg = function("attnrt_last_error")()
    return msg.decode("utf-8", "replace") if msg else ""


def call(name, *args):
    """Calls `name`; a non-OK status raises Error with attnrt_last_error()'s text."""
    status = function(name)(*args)
    if status != 0:
        raise Error(status, last_error() or "%s failed" % name)
    return status


def text(raw):
    """A C string (bytes or None) as str."""
    return raw.decode("utf-8", "replace") if raw else ""
