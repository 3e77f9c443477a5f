"""Library facts, devices, plugins, logging, contexts, streams, events and device buffers."""
import ctypes
import weakref
from collections import namedtuple
from ctypes import byref, c_char_p, c_float, c_int, c_uint32, c_void_p

from . import _dlpack
from . import _lib
from . import _types as T
from ._lib import Error, call

# ---- library facts ---------------------------------------------------------------------------------

def version():
    """The library's version (major, minor, patch)."""
    v = [c_int(), c_int(), c_int()]
    _lib.function("attnrt_version")(byref(v[0]), byref(v[1]), byref(v[2]))
    return tuple(x.value for x in v)


def abi_version():
    """The plugin ABI (major, minor) the loaded library speaks."""
    major, minor = c_uint32(), c_uint32()
    _lib.function("attnrt_abi_version")(byref(major), byref(minor))
    return major.value, minor.value


def version_string():
    return _lib.text(_lib.function("attnrt_version_string")())


def status_name(status):
    return _lib.text(_lib.function("attnrt_status_name")(int(status)))


def init():
    """Discovers and loads plugins now (any first call does it)."""
    call("attnrt_init")


PluginInfo = namedtuple("PluginInfo", "index name path version abi_major abi_minor status reason device_count")
DeviceInfo = namedtuple("DeviceInfo", "index name vendor model arch driver device_type compute_units memory_total "
                                      "memory_free attributes plugin")


def plugins():
    """Every plugin file tried, loaded or not, in discovery order."""
    n = c_uint32()
    call("attnrt_plugin_count", byref(n))
    out = []
    for i in range(n.value):
        info = T.PluginInfo()
        call("attnrt_plugin_get_info", i, byref(info))
        out.append(PluginInfo(i, _lib.text(info.name), _lib.text(info.path), _lib.text(info.version),
                              info.abi_major, info.abi_minor, info.status, _lib.text(info.reason),
                              info.device_count))
    return out


def device_info(index):
    props = T.DeviceProperties()
    call("attnrt_device_get_properties", index, byref(props))
    attributes = {}
    for i in range(props.attribute_count):
        attr = T.DeviceAttribute()
        call("attnrt_device_get_attribute", index, i, byref(attr))
        attributes[_lib.text(attr.key)] = _lib.text(attr.value)
    plugin = c_uint32()
    call("attnrt_device_get_plugin", index, byref(plugin))
    return DeviceInfo(index, _lib.text(props.name), _lib.text(props.vendor), _lib.text(props.model),
                      _lib.text(props.arch), _lib.text(props.driver), props.device_type, props.compute_units,
                      props.memory_total, props.memory_free, attributes, plugin.value)


def devices():
    """Every device of every loaded plugin, as DeviceInfo."""
    n = c_uint32()
    call("attnrt_device_count", byref(n))
    return [device_info(i) for i in range(n.value)]


def default_device():
    """The name of the device attnrt.open() would use (ATTNRT_DEVICE, else the first GPU, else the CPU)."""
    index = c_uint32()
    call("attnrt_device_default", byref(index))
    return device_info(index.value).name


# ---- logging ---------------------------------------------------------------------------------------

_LogFn = ctypes.CFUNCTYPE(None, c_uint32, c_char_p, c_void_p)
# Every sink ever installed stays alive: a line being logged on another thread when the sink is replaced may
# still call the old one.
_log_sinks = []


def set_log_callback(fn):
    """Routes the library's and plugins' log lines to fn(level, line); None restores stderr.

    fn may be called from any thread, several at once; an exception it raises is printed and dropped."""
    if fn is None:
        call("attnrt_log_set_callback", None, None)
        return

    def sink(level, line, _user):
        fn(T.LogLevel(level) if level <= T.LogLevel.DEBUG else level, _lib.text(line))

    new_sink = _LogFn(sink)
    _log_sinks.append(new_sink)
    call("attnrt_log_set_callback", ctypes.cast(new_sink, c_void_p), None)


def set_log_level(level):
    """Drops lines above `level` (attnrt.LogLevel or its name: "error", "warn", "info", "debug")."""
    if isinstance(level, str):
        level = T.LogLevel[level.upper()]
    call("attnrt_log_set_level", int(level))


# ---- contexts ----------------------------------------------------------------------------------------

class _Resource:
    """Something made on a context; closed with it (attnrt_close refuses while any is live)."""

    _handle = None
    ctx = None
    _what = "object"  # how messages name it: "stream", "plan", ...

    @property
    def handle(self):
        if self._handle is None:
            raise Error(T.Status.ERR_INVALID_ARGUMENT, "attnrt: the %s was destroyed" % self._what)
        return self._handle

    def _register(self, ctx):
        self.ctx = ctx
        ctx._resources.add(self)

    def close(self):
        if self._handle is not None and self.ctx is not None and self.ctx._handle is not None:
            handle, self._handle = self._handle, None
            self.ctx._resources.discard(self)
            self._release_handle(handle)
        self._handle = None

    def _release_handle(self, handle):
        raise NotImplementedError

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shut-down or a library error: nothing sensible left to do
            pass


def open(device=None, options=None):  # noqa: A001 (attnrt.open mirrors attnrt_open)
    """A Context on `device` ("cpu:0", "cuda:1"; None: attnrt.default_device()).

    options: {key: value} device options (attnrt_open_with_options), e.g. {"profile": "rbln-rebel100"}."""
    return Context(device, options)


class Context:
    """An open device. Use as a context manager, or call close(); closing frees what the package made on it."""

    def __init__(self, device=None, options=None):
        self._handle = None
        self._resources = weakref.WeakSet()
        self._wrapped_streams = {}
        handle = c_void_p()
        name = device.encode() if device else None
        if options:
            attrs = (T.DeviceAttribute * len(options))()
            for i, (key, value) in enumerate(options.items()):
                attrs[i].struct_size = ctypes.sizeof(T.DeviceAttribute)
                attrs[i].key = str(key).encode()
                attrs[i].value = str(value).encode()
            call("attnrt_open_with_options", name, attrs, len(options), byref(handle))
        else:
            call("attnrt_open", name, byref(handle))
        self._handle = handle.value
        try:
            self.device = _lib.text(_lib.function("attnrt_context_device_name")(self._handle))
            index = c_uint32()
            call("attnrt_device_find", self.device.encode(), byref(index))
            self.info = device_info(index.value)
        except BaseException:
            self.close()
            raise

    @property
    def handle(self):
        """The attnrt_context_t pointer (an int); Error once closed."""
        if self._handle is None:
            raise Error(T.Status.ERR_INVALID_ARGUMENT, "attnrt: the context is closed")
        return self._handle

    @property
    def device_type(self):
        return T.DeviceType(self.info.device_type) if self.info.device_type in T.DeviceType._value2member_map_ \
            else self.info.device_type

    @property
    def is_cuda(self):
        return self.info.device_type == T.DeviceType.CUDA

    @property
    def ordinal(self):
        """The device's index within its plugin ("cuda:1" -> 1)."""
        return int(self.device.rsplit(":", 1)[1])

    def close(self):
        """Frees every plan, pool, buffer, stream and event the package made here, then closes the context."""
        if self._handle is None:
            return
        for stream in list(self._wrapped_streams.values()):
            stream.close()
        self._wrapped_streams.clear()
        for resource in list(self._resources):
            resource.close()
        call("attnrt_close", self._handle)
        self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self):
        return "attnrt.Context(%r%s)" % (self.device, "" if self._handle else ", closed")

    # ---- tensors, memory, streams, events ----

    def tensor(self, obj, dtype=None):
        """(attnrt.Tensor, keep) over a DLPack object on this device; keep `keep` alive while it is used."""
        if isinstance(obj, T.Tensor):
            t = T.Tensor.from_buffer_copy(obj)
            if dtype is not None:
                _dlpack.retype(t, T.dtype(dtype), "tensor")
            return t, obj
        return _dlpack.from_dlpack(self.handle, obj, dtype)

    def alloc(self, nbytes):
        """A DeviceBuffer of `nbytes` bytes of device memory (attnrt_mem_alloc)."""
        return DeviceBuffer(self, nbytes)

    def stream(self):
        """A new stream (attnrt_stream_create)."""
        return Stream(self)

    def wrap_stream(self, native):
        """The engine's native stream (a CUstream as an int: torch's cuda_stream) as a Stream, without
        taking ownership; wrappers are cached per handle and freed with the context."""
        native = int(native or 0)
        stream = self._wrapped_streams.get(native)
        if stream is None or stream._handle is None:
            stream = Stream(self, native=native)
            self._wrapped_streams[native] = stream
        return stream

    def event(self):
        return Event(self)

    def wrap_event(self, native):
        """The engine's native event (a CUevent as an int: torch.cuda.Event's cuda_event) as an Event."""
        return Event(self, native=int(native))

    def synchronize(self, stream=None):
        call("attnrt_stream_synchronize", self.handle, _stream_handle(stream))

    # ---- capabilities ----

    def supports(self, op, q_dtype=None, kv_dtype=None, head_dim_qk=0, head_dim_v=0, block_size=0, num_q_heads=0,
                 num_kv_heads=0, features=0):
        """(True, "") when the device supports the combination, else (False, the plugin's reason)."""
        query = T.OpQuery(op=int(op), head_dim_qk=head_dim_qk, head_dim_v=head_dim_v, block_size=block_size,
                          num_q_heads=num_q_heads, num_kv_heads=num_kv_heads, features=int(features))
        if q_dtype is not None:
            query.q_dtype = T.dtype(q_dtype)
        if kv_dtype is not None:
            query.kv_dtype = T.dtype(kv_dtype)
        reason = ctypes.create_string_buffer(512)
        status = _lib.function("attnrt_op_supported")(self.handle, byref(query), reason, len(reason))
        if status == T.Status.ERR_UNSUPPORTED:
            return False, _lib.text(reason.value)
        if status != 0:
            raise Error(status, _lib.last_error())
        return True, ""

    def select_attention(self, **config):
        """attnrt_select_attention: keywords are attnrt.AttentionConfig's fields; returns a dict."""
        cfg = T.AttentionConfig()
        for key, value in config.items():
            if key == "attn_impl":
                value = value.encode()
            elif key == "kv_dtype":
                value = T.dtype(value)
            setattr(cfg, key, value)
        sel = T.AttentionSelection()
        call("attnrt_select_attention", self.handle, byref(cfg), byref(sel))
        return {"kernel": _lib.text(sel.kernel), "block_size": sel.block_size, "partition_len": sel.partition_len,
                "num_partitions": sel.num_partitions, "prefill_chunk": sel.prefill_chunk,
                "notes": _lib.text(sel.notes)}

    def last_op_stats(self):
        stats = T.OpStats()
        call("attnrt_last_op_stats", self.handle, byref(stats))
        return {name: getattr(stats, name) for name, _ in T.OpStats._fields_ if name != "struct_size"}


def _stream_handle(stream):
    if stream is None:
        return None
    if isinstance(stream, Stream):
        return stream.handle
    raise TypeError("attnrt: expected an attnrt.Stream or None, got %s" % type(stream).__name__)


class DeviceBuffer(_Resource):
    """Device memory from attnrt_mem_alloc; `ptr` is its address (an int)."""

    def __init__(self, ctx, nbytes):
        ptr = c_void_p()
        call("attnrt_mem_alloc", ctx.handle, int(nbytes), byref(ptr))
        self._handle = ptr.value
        self.nbytes = int(nbytes)
        self._register(ctx)

    @property
    def ptr(self):
        if self._handle is None:
            raise Error(T.Status.ERR_INVALID_ARGUMENT, "attnrt: the buffer was freed")
        return self._handle

    def _release_handle(self, handle):
        call("attnrt_mem_free", self.ctx._handle, handle)

    def tensor(self, shape, dtype, offset=0):
        """A row-major attnrt.Tensor over this buffer from byte `offset`."""
        return T.Tensor.make(shape, dtype, data=self.ptr + offset)

    def copy_from_host(self, src, nbytes=None, offset=0, stream=None):
        """Copies bytes from a host buffer (bytes-like or numpy array) into this buffer."""
        view = memoryview(src).cast("B")
        n = view.nbytes if nbytes is None else nbytes
        holder = (ctypes.c_char * view.nbytes).from_buffer_copy(view)
        call("attnrt_mem_copy_to_device", self.ctx.handle, self.ptr + offset, holder, n, _stream_handle(stream))

    def copy_to_host(self, dst, nbytes=None, offset=0, stream=None):
        """Copies bytes into a writable host buffer (bytearray, numpy array)."""
        view = memoryview(dst).cast("B")
        n = view.nbytes if nbytes is None else nbytes
        holder = (ctypes.c_char * view.nbytes).from_buffer(view)
        call("attnrt_mem_copy_to_host", self.ctx.handle, holder, self.ptr + offset, n, _stream_handle(stream))

    def fill(self, byte, stream=None):
        call("attnrt_mem_set", self.ctx.handle, self.ptr, int(byte), self.nbytes, _stream_handle(stream))


class Stream(_Resource):
    """A stream of a context: created (owned), or wrapped around the engine's native stream (borrowed)."""

    _what = "stream"

    def __init__(self, ctx, native=None):
        handle = ctypes.c_void_p()
        if native is None:
            call("attnrt_stream_create", ctx.handle, byref(handle))
        else:
            call("attnrt_stream_wrap", ctx.handle, c_void_p(native), byref(handle))
        self._handle = handle.value
        self._native = native
        self._register(ctx)

    @property
    def native(self):
        """The device API's stream handle (an int; 0 for CUDA's legacy default stream)."""
        if self._native is None:
            native = c_void_p()
            call("attnrt_stream_native", self.ctx.handle, self.handle, byref(native))
            self._native = native.value or 0
        return self._native

    def _release_handle(self, handle):
        call("attnrt_stream_destroy", handle)

    def synchronize(self):
        call("attnrt_stream_synchronize", self.ctx.handle, self.handle)

    def wait(self, event):
        """Later work on this stream waits for `event`, without blocking the host."""
        call("attnrt_stream_wait_event", self.handle, event.handle)

    def record(self, event=None):
        """Records `event` (a new one when None) here and returns it."""
        event = event or Event(self.ctx)
        event.record(self)
        return event


class Event(_Resource):
    """An event of a context: created, or wrapped around the engine's native event."""

    _what = "event"

    def __init__(self, ctx, native=None):
        handle = ctypes.c_void_p()
        if native is None:
            call("attnrt_event_create", ctx.handle, byref(handle))
        else:
            call("attnrt_event_wrap", ctx.handle, c_void_p(native), byref(handle))
        self._handle = handle.value
        self._register(ctx)

    @property
    def native(self):
        native = c_void_p()
        call("attnrt_event_native", self.handle, byref(native))
        return native.value or 0

    def _release_handle(self, handle):
        call("attnrt_event_destroy", handle)

    def record(self, stream=None):
        call("attnrt_event_record", self.handle, _stream_handle(stream))

    def synchronize(self):
        call("attnrt_event_synchronize", self.handle)

    def elapsed_ms(self, end):
        """Milliseconds from this event to `end`."""
        ms = c_float()
        call("attnrt_event_elapsed_ms", self.handle, end.handle, byref(ms))
        return ms.value

