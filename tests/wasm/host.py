"""A scripted proxy-wasm host (ABI 0.2.1) that runs the built plugin in-process.

The release module (`make build`: target/wasm32-wasip1/release/mcp_toon.wasm)
runs in Wasmtime's Python embedding (PyPI `wasmtime`, which also provides
WASI preview1). This module is the host: it implements the `env` imports the
module declares, calls its exports the way Envoy does, and plays the client
and the server of one HTTP stream at a time. Unlike Envoy it can be told to
do what Envoy will not do on demand: fail any host call with any status the
ABI allows, deliver callbacks in unusual orders, reset a stream at any
point, and call back into the plugin from inside a host call.

Sources of the modelled behaviour (cited at each rule below):
- [spec]   proxy-wasm/spec @3a844b8, abi-versions/v0.2.1/README.md
- [cpp]    proxy-wasm/proxy-wasm-cpp-host @52a0291: src/exports.cc (argument
           checks and statuses), src/context.cc (callback order, result
           conversion), src/wasm.cc (VM start); [cpp shared_data]:
           src/shared_data.cc (compare-and-swap versions). WASI, random_get
           included, is Wasmtime's (random bytes from the OS, as Envoy's
           host answers from BoringSSL)
- [envoy]  envoyproxy/envoy @b40935ac: source/extensions/common/wasm/context.cc
           (buffers, header maps, filter callbacks, continue_stream, callouts)
- [filter] envoyproxy/envoy envoy/http/filter.h (FilterHeadersStatus /
           FilterDataStatus: what the filter manager does with each result)
- [sdk]    proxy-wasm Rust SDK 0.2.5 (the plugin's dispatcher and allocator)

Everything the tests observe is on `Outcome`: the bytes the client and the
server received, whether the VM trapped (with the plugin's panic message,
which the SDK's panic hook sends through proxy_log), every host call the
plugin made, and the callouts it started.
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass, field
from typing import Callable, Optional

import wasmtime


class Status(enum.IntEnum):
    """`proxy_status_t` [spec]."""

    OK = 0
    NOT_FOUND = 1
    BAD_ARGUMENT = 2
    SERIALIZATION_FAILURE = 3
    PARSE_FAILURE = 4
    INVALID_MEMORY_ACCESS = 6
    EMPTY = 7
    CAS_MISMATCH = 8
    INTERNAL_FAILURE = 10
    UNIMPLEMENTED = 12


# The non-Ok statuses each import may return, from the "Returned Status"
# list of every function in [spec] v0.2.1. The fault tests return each of
# them from each call the plugin makes.
STATUSES: dict[str, tuple[Status, ...]] = {
    "proxy_log": (Status.BAD_ARGUMENT, Status.INVALID_MEMORY_ACCESS),
    "proxy_get_log_level": (Status.INVALID_MEMORY_ACCESS,),
    "proxy_get_current_time_nanoseconds": (Status.INVALID_MEMORY_ACCESS,),
    "proxy_set_effective_context": (Status.BAD_ARGUMENT,),
    "proxy_get_buffer_bytes": (Status.BAD_ARGUMENT, Status.NOT_FOUND, Status.INVALID_MEMORY_ACCESS),
    "proxy_set_buffer_bytes": (Status.BAD_ARGUMENT, Status.NOT_FOUND, Status.INVALID_MEMORY_ACCESS),
    "proxy_get_header_map_value": (Status.BAD_ARGUMENT, Status.NOT_FOUND, Status.INVALID_MEMORY_ACCESS),
    "proxy_replace_header_map_value": (Status.BAD_ARGUMENT, Status.INVALID_MEMORY_ACCESS),
    "proxy_remove_header_map_value": (Status.BAD_ARGUMENT, Status.INVALID_MEMORY_ACCESS),
    "proxy_continue_stream": (Status.BAD_ARGUMENT, Status.UNIMPLEMENTED),
    "proxy_http_call": (Status.BAD_ARGUMENT, Status.INTERNAL_FAILURE, Status.INVALID_MEMORY_ACCESS),
    "proxy_get_shared_data": (Status.NOT_FOUND, Status.INVALID_MEMORY_ACCESS),
    "proxy_set_shared_data": (Status.CAS_MISMATCH, Status.INVALID_MEMORY_ACCESS),
    "proxy_define_metric": (Status.BAD_ARGUMENT, Status.INVALID_MEMORY_ACCESS),
    "proxy_increment_metric": (Status.NOT_FOUND, Status.BAD_ARGUMENT),
    "proxy_record_metric": (Status.NOT_FOUND,),
    "proxy_get_property": (Status.NOT_FOUND, Status.SERIALIZATION_FAILURE, Status.INVALID_MEMORY_ACCESS),
    "proxy_set_property": (Status.NOT_FOUND, Status.INVALID_MEMORY_ACCESS),
    "proxy_send_local_response": (Status.INVALID_MEMORY_ACCESS,),
    "proxy_set_tick_period_milliseconds": (Status.BAD_ARGUMENT,),
}

CONTINUE, PAUSE = 0, 1  # proxy_action_t [spec]

# proxy_buffer_type_t and proxy_map_type_t [spec]
REQUEST_BODY, RESPONSE_BODY, CALL_RESPONSE_BODY, VM_CONFIGURATION, PLUGIN_CONFIGURATION = 0, 1, 4, 6, 7
REQUEST_HEADERS, REQUEST_TRAILERS, RESPONSE_HEADERS, RESPONSE_TRAILERS = 0, 1, 2, 3
CALL_RESPONSE_HEADERS, CALL_RESPONSE_TRAILERS = 6, 7
# proxy_stream_type_t [spec]
STREAM_REQUEST, STREAM_RESPONSE, STREAM_DOWNSTREAM, STREAM_UPSTREAM = 0, 1, 2, 3

ROOT_ID = 1

# Streams played in this process (the run's scale, printed at the end).
played = 0

Pairs = list[tuple[str, str]]


class HostBug(Exception):
    """The host itself failed (a bug in this file, not in the plugin)."""


class Trapped(Exception):
    """The VM trapped; Envoy would fail every stream on this VM [cpp CHECK_FAIL]."""


@dataclass(frozen=True)
class Fault:
    """Makes the host answer `status` to a call of `name` instead of
    performing it (out-parameters untouched). `index` is the 0-based number
    of the call among all calls to `name` in the VM's life (None: every
    call); `onward` fails that call and every later one."""

    name: str
    status: Status
    index: Optional[int] = None
    onward: bool = False

    def matches(self, name: str, index: int) -> bool:
        if name != self.name:
            return False
        if self.index is None:
            return True
        return index >= self.index if self.onward else index == self.index


@dataclass(frozen=True)
class Reentry:
    """Before the host returns from call number `call` (0-based, over all
    `env` calls in the VM's life), it calls `export` (proxy_on_log or
    proxy_on_done) for the stream whose callback is running — what a host
    does when it logs or resets a stream synchronously inside a host call
    (seen with Envoy's synchronous resume, proxy-wasm-rust-sdk issue #43,
    and APISIX, issue #255). After proxy_on_done the stream is reset and
    proxy_on_delete follows once the outer callback has returned (Envoy
    destroys contexts through deferred deletion)."""

    call: int
    export: str


@dataclass
class Call:
    """One `env` call the plugin made."""

    index: int
    name: str
    nth: int  # among calls to `name`
    context: int
    callback: str
    detail: str
    status: Status
    # Position in the script of the event being played when the call was
    # made (len(script) once the script is over: callouts settling, close).
    event: int = 0


@dataclass
class Side:
    """What one peer received: the client gets the response, the server the request."""

    headers: Optional[Pairs] = None
    body: bytearray = field(default_factory=bytearray)
    trailers: Optional[Pairs] = None
    state: str = "open"  # open | complete | reset
    local_reply: Optional[int] = None

    def header(self, name: str) -> Optional[str]:
        for k, v in self.headers or []:
            if k == name:
                return v
        return None


@dataclass
class Callout:
    token: int
    context: int
    cluster: str
    headers: Pairs
    body: bytes
    timeout_ms: int
    answered: bool = False
    canceled: bool = False  # the stream went away before the reply


@dataclass
class Reply:
    """A callout's outcome: a response, or (status None) a reset with no
    headers, as Envoy reports a failed call [envoy onHttpCallFailure]."""

    status: Optional[int]
    body: bytes = b""
    headers: Pairs = field(default_factory=list)


class Direction:
    """One direction of the stream through the filter, with Envoy's rules
    for buffers, header maps and filter results [envoy Context::decode*/
    encode*, filter]."""

    def __init__(self, request: bool, peer: Side) -> None:
        self.request = request
        self.peer = peer
        self.body_buffer_type = REQUEST_BODY if request else RESPONSE_BODY
        self.headers_type = REQUEST_HEADERS if request else RESPONSE_HEADERS
        self.trailers_type = REQUEST_TRAILERS if request else RESPONSE_TRAILERS
        self.headers: Optional[Pairs] = None
        # Envoy keeps its pointer to the header map while the filter has
        # not returned Continue from the headers callback; afterwards the
        # map is gone (`request_headers_ = nullptr` / `response_headers_`).
        self.headers_live = False
        self.headers_sent = False
        # Pause from the headers callback without allow_on_headers_stop_iteration
        # becomes StopAllIterationAndWatermark [cpp convertVmCallResultToFilterHeadersStatus]:
        # Envoy then queues body and trailers without calling the filter.
        self.stopped_all = False
        self.queued = bytearray()
        self.queued_end = False
        self.queued_trailers: Optional[Pairs] = None
        # The `data` of the body callback now running, and the body Envoy
        # buffers for the filter after StopIterationAndBuffer.
        self.data: Optional[bytearray] = None
        self.buffering = False
        self.buffered = bytearray()
        self.end_seen = False  # the last body callback had end_of_stream
        self.trailers: Optional[Pairs] = None
        self.trailers_live = False
        self.paused_trailers = False
        self.finished = False  # end of stream passed the filter

    def body_buffer(self) -> Optional[bytearray]:
        """Envoy's `getBuffer(HttpRequestBody/HttpResponseBody)`: the
        encoding/decoding buffer while buffering, else the current `data`,
        which is `nullptr` outside a body callback (reset to null when the
        callback returns Continue)."""
        if self.buffering:
            return self.buffered
        return self.data


class Vm:
    """One plugin VM: a Wasmtime instance and the contexts in it."""

    def __init__(
        self,
        engine: wasmtime.Engine,
        module: wasmtime.Module,
        configuration: bytes,
        *,
        faults: tuple[Fault, ...] = (),
        reentries: tuple[Reentry, ...] = (),
        allow_on_headers_stop_iteration: bool = False,
        buffer_limit: int = 1 << 20,
        clusters: tuple[str, ...] = ("llm",),
        properties: Optional[dict[tuple[str, ...], bytes]] = None,
        root_property_reads: bool = True,
    ) -> None:
        self.configuration = configuration
        self.faults = faults
        self.reentries = {r.call: r for r in reentries}
        self.allow_on_headers_stop_iteration = allow_on_headers_stop_iteration
        self.buffer_limit = buffer_limit
        self.clusters = clusters
        # [envoy context.cc getProperty]: plugin_vm_id is answered in every
        # context (empty when the configuration names no vm_id).
        self.properties = properties if properties is not None else {("plugin_vm_id",): b""}
        # False: APISIX's wasm-nginx-module, which refuses every property
        # read outside a request but plugin_root_id (BadArgument).
        self.root_property_reads = root_property_reads
        self.calls: list[Call] = []
        self.counts: dict[str, int] = {}
        self.logs: list[tuple[int, str]] = []
        self.log_level = 0
        self.unexpected: list[str] = []
        self.shared: dict[bytes, tuple[bytes, int]] = {}
        # [cpp shared_data.cc nextCas]: one counter for every key, never 0.
        self.next_cas = 1
        # [cpp wasm.cc setTimerPeriod]: the root context's timer, 0 = off.
        self.tick_period_ms = 0
        self.metrics: dict[int, tuple[int, str, int]] = {}  # id -> (type, name, value)
        self.callouts: dict[int, Callout] = {}
        self.next_token = 1
        self.clock_ns = 1_700_000_000_000_000_000
        self.trap: Optional[str] = None
        self.host_error: Optional[BaseException] = None
        self.streams: dict[int, "Stream"] = {}
        self.next_id = ROOT_ID + 1
        # What runs now: the context whose callback is executing and its name.
        self.active: Optional[int] = None
        self.callback = ""
        self.event = 0
        self.effective: Optional[int] = None
        self.depth = 0
        self.after_call: list[Callable[[], None]] = []
        self.configuring = False
        # The reply being delivered (Envoy: the root context's
        # http_call_response_, set only during onHttpCallResponse).
        self.call_response: Optional[Reply] = None

        self.store = wasmtime.Store(engine)
        # No stdio: the SDK's panic hook reports through proxy_log, and
        # custom WASI output streams made libwasmtime spawn tokio threads
        # that abort the interpreter at exit.
        self.store.set_wasi(wasmtime.WasiConfig())
        linker = wasmtime.Linker(engine)
        linker.define_wasi()
        for imp in module.imports:
            if imp.module != "env":
                continue
            impl = getattr(self, "_" + imp.name, None)
            unsigned = tuple(str(p) == "i32" for p in imp.type.params)
            linker.define_func("env", imp.name, imp.type, self._wrap(imp.name, impl, unsigned), access_caller=True)
        self.instance = linker.instantiate(self.store, module)
        exports = self.instance.exports(self.store)
        self.memory: wasmtime.Memory = exports["memory"]
        self.exports = exports

    # ---- lifecycle [cpp wasm.cc startVm, context.cc onStart/onConfigure] ----

    def start(self) -> bool:
        """`_initialize`, then the root context: on_context_create,
        on_vm_start, on_configure (whose false makes Envoy refuse the
        plugin)."""
        self._invoke("_initialize", None, "_initialize")
        self._invoke("proxy_on_context_create", ROOT_ID, "on_context_create", ROOT_ID, 0)
        if not self._invoke("proxy_on_vm_start", ROOT_ID, "on_vm_start", ROOT_ID, 0):
            return False
        self.configuring = True
        try:
            return bool(
                self._invoke("proxy_on_configure", ROOT_ID, "on_configure", ROOT_ID, len(self.configuration))
            )
        finally:
            self.configuring = False

    def memory_bytes(self) -> int:
        return self.memory.data_len(self.store)

    def _invoke(self, export: str, context: Optional[int], callback: str, *args: int):
        """Calls an export with `context` active; runs Envoy's deferred
        after-VM-call actions when the outermost call returns [cpp
        DeferAfterCallActions]. A trap marks the VM failed."""
        if self.trap is not None:
            raise Trapped(self.trap)
        saved = (self.active, self.callback, self.effective)
        self.active, self.callback, self.effective = context, callback, context
        self.depth += 1
        try:
            result = self.exports[export](self.store, *args)
        except Exception as e:  # wasmtime re-raises what a host function raised
            if self.host_error is not None:
                raise HostBug(f"{export}: {self.host_error!r}") from self.host_error
            panic = [m for level, m in self.logs if level == 5]
            message = panic[-1] if panic else str(e).splitlines()[0]
            self.trap = " ".join(message.split()) + f" (in {export})"
            raise Trapped(self.trap) from None
        finally:
            self.depth -= 1
            self.active, self.callback, self.effective = saved
        if self.depth == 0:
            while self.after_call:
                self.after_call.pop(0)()
        return result

    # ---- import plumbing ----

    def _wrap(self, name: str, impl, unsigned: tuple[bool, ...]):
        # wasm32 pointers and sizes are u32; wasmtime hands i32 over signed.
        def call(caller, *args):
            if self.host_error is not None:
                raise RuntimeError("host failed earlier")
            args = tuple(a & 0xFFFFFFFF if u else a for a, u in zip(args, unsigned))
            try:
                return self._dispatch(caller, name, impl, args)
            except (wasmtime.WasmtimeError, wasmtime.Trap):
                raise  # a trap in a nested call into the VM: the plugin's
            except BaseException as e:  # a host bug: surface it, not as a plugin trap
                self.host_error = e
                raise

        return call

    def _dispatch(self, caller, name: str, impl, args):
        nth = self.counts.get(name, 0)
        self.counts[name] = nth + 1
        index = len(self.calls)
        context = self.effective if self.effective is not None else 0
        record = Call(index, name, nth, context, self.callback, "", Status.OK, self.event)
        self.calls.append(record)
        fault = next((f for f in self.faults if f.matches(name, nth)), None)
        if impl is None:
            self.unexpected.append(name)
            record.status = Status.UNIMPLEMENTED
            return int(Status.UNIMPLEMENTED)
        if fault is not None:
            record.status = fault.status
            record.detail = "injected"
            status = fault.status
            if name == "proxy_set_effective_context":
                # [cpp exports.cc set_effective_context] answers BadArgument
                # only for a context id the host no longer has: the stream
                # was destroyed, and Envoy cancels a destroyed context's
                # callouts [envoy Context::~Context]. Model that stream
                # as gone, not as alive and unaddressable.
                gone = self.streams.get(args[0]) if args else None
                if gone is not None:
                    gone.vanish()
        else:
            status, record.detail = impl(caller, *args)
            record.status = Status(status)
        reentry = self.reentries.get(index)
        if reentry is not None and self.effective in self.streams:
            self.streams[self.effective]._reenter(caller, reentry.export)
        return int(status)

    def _read(self, caller, ptr: int, size: int) -> bytes:
        if size == 0:
            return b""
        return bytes(self.memory.read(caller, ptr, ptr + size))

    def _put_u32(self, caller, ptr: int, value: int) -> None:
        self.memory.write(caller, struct.pack("<I", value), ptr)

    def _put_u64(self, caller, ptr: int, value: int) -> None:
        self.memory.write(caller, struct.pack("<Q", value), ptr)

    def _return_bytes(self, caller, data: bytes, ptr_ptr: int, size_ptr: int) -> None:
        """Hands bytes to the plugin in memory it allocates through its
        `proxy_on_memory_allocate` export [spec, sdk allocator]."""
        if data:
            ptr = caller["proxy_on_memory_allocate"](caller, len(data))
            self.memory.write(caller, data, ptr)
        else:
            ptr = 0
        self._put_u32(caller, ptr_ptr, ptr)
        self._put_u32(caller, size_ptr, len(data))

    def _stream_of(self) -> Optional["Stream"]:
        return self.streams.get(self.effective) if self.effective is not None else None

    # ---- env imports: logging, time, context ----

    def _proxy_log(self, caller, level, ptr, size):
        if level > 5:
            return Status.BAD_ARGUMENT, f"level={level}"
        message = self._read(caller, ptr, size).decode("utf-8", "replace")
        self.logs.append((level, message))
        return Status.OK, f"level={level}"

    def _proxy_get_log_level(self, caller, ptr):
        # [cpp exports.cc get_log_level]: the host's level for the plugin's
        # lines; trace here, so the tests see every line the plugin writes.
        self._put_u32(caller, ptr, self.log_level)
        return Status.OK, f"level={self.log_level}"

    def _proxy_get_current_time_nanoseconds(self, caller, ptr):
        self._put_u64(caller, ptr, self.clock_ns)
        return Status.OK, ""

    def _proxy_set_effective_context(self, caller, context_id):
        # [cpp exports.cc set_effective_context]: BadArgument for an unknown id.
        if context_id != ROOT_ID and context_id not in self.streams:
            return Status.BAD_ARGUMENT, f"id={context_id}"
        self.effective = context_id
        return Status.OK, f"id={context_id}"

    def _proxy_done(self, caller):
        return Status.NOT_FOUND, ""

    # ---- buffers [cpp exports.cc get/set_buffer_bytes, envoy getBuffer, Buffer::copyFrom] ----

    def _buffer(self, kind: int):
        """Returns (bytes-like or None, writable); None = Envoy's getBuffer
        returned nullptr (NotFound). A present-but-null Envoy buffer is
        returned as an empty, unwritable one: reads see nothing and writes
        get BadArgument (`proxy_wasm::BufferBase::copyFrom`)."""
        stream = self._stream_of()
        if kind in (REQUEST_BODY, RESPONSE_BODY):
            if stream is None:
                return bytearray(), False
            d = stream.requests if kind == REQUEST_BODY else stream.responses
            buf = d.body_buffer()
            if buf is None:
                return bytearray(), False
            return buf, True
        if kind == CALL_RESPONSE_BODY:
            if self.call_response is None:
                return None, False
            return bytearray(self.call_response.body), False
        if kind == VM_CONFIGURATION:
            return bytearray(), False
        if kind == PLUGIN_CONFIGURATION:
            return (bytearray(self.configuration), False) if self.configuring else (None, False)
        return None, False

    def _proxy_get_buffer_bytes(self, caller, kind, start, length, ptr_ptr, size_ptr):
        detail = f"buffer={kind} start={start} max={length}"
        if kind > 8:
            return Status.BAD_ARGUMENT, detail
        buf, _ = self._buffer(kind)
        if buf is None:
            return Status.NOT_FOUND, detail
        if start > start + length:
            return Status.BAD_ARGUMENT, detail
        data = bytes(buf[start : start + length]) if start <= len(buf) else b""
        self._return_bytes(caller, data, ptr_ptr, size_ptr)
        return Status.OK, detail + f" -> {len(data)}"

    def _proxy_set_buffer_bytes(self, caller, kind, start, length, ptr, size):
        detail = f"buffer={kind} start={start} size={length} len={size}"
        if kind > 8:
            return Status.BAD_ARGUMENT, detail
        buf, writable = self._buffer(kind)
        if buf is None:
            return Status.NOT_FOUND, detail
        if not writable:
            return Status.BAD_ARGUMENT, detail
        data = self._read(caller, ptr, size)
        # Envoy's Buffer::copyFrom: start 0 drains `length` bytes and
        # prepends; start at or past the end appends; anything else is
        # BadArgument.
        if start == 0:
            del buf[: min(length, len(buf))]
            buf[0:0] = data
        elif start >= len(buf):
            buf += data
        else:
            return Status.BAD_ARGUMENT, detail
        return Status.OK, detail

    # ---- header maps [cpp exports.cc, envoy getMap/getConstMap] ----

    def _map(self, kind: int) -> Optional[Pairs]:
        """The header map Envoy holds a pointer to now, or None (then reads
        and writes get BadArgument)."""
        stream = self._stream_of()
        if kind in (CALL_RESPONSE_HEADERS, CALL_RESPONSE_TRAILERS):
            reply = self.call_response
            if reply is None:
                return None
            return reply.headers if kind == CALL_RESPONSE_HEADERS else []
        if stream is None:
            return None
        for d in (stream.requests, stream.responses):
            if kind == d.headers_type:
                if d.headers_live or (stream.logging and d.headers is not None):
                    return d.headers
                return None
            if kind == d.trailers_type:
                return d.trailers if d.trailers_live else None
        return None

    def _proxy_get_header_map_value(self, caller, kind, kptr, ksize, ptr_ptr, size_ptr):
        key = self._read(caller, kptr, ksize).decode("latin-1").lower()
        detail = f"map={kind} {key}"
        if kind > 7:
            return Status.BAD_ARGUMENT, detail
        m = self._map(kind)
        if m is None:
            return Status.BAD_ARGUMENT, detail + " (map unavailable)"
        for k, v in m:
            if k == key:
                self._return_bytes(caller, v.encode("latin-1"), ptr_ptr, size_ptr)
                return Status.OK, detail
        return Status.NOT_FOUND, detail

    def _writable_map(self, kind: int, detail: str):
        if kind > 7:
            return None, (Status.BAD_ARGUMENT, detail)
        m = self._map(kind)
        if m is None or kind >= CALL_RESPONSE_HEADERS:
            return None, (Status.BAD_ARGUMENT, detail + " (map unavailable)")
        stream = self._stream_of()
        if stream is not None:
            for d in (stream.requests, stream.responses):
                if kind == d.headers_type and d.headers_sent:
                    # Envoy still holds the pointer (headers were paused, then
                    # released by a later Continue): the write succeeds and
                    # reaches no one.
                    detail += " (headers already sent)"
        return m, (Status.OK, detail)

    def _proxy_replace_header_map_value(self, caller, kind, kptr, ksize, vptr, vsize):
        key = self._read(caller, kptr, ksize).decode("latin-1").lower()
        value = self._read(caller, vptr, vsize).decode("latin-1")
        m, result = self._writable_map(kind, f"map={kind} {key}={value}")
        if m is not None:
            rest = [(k, v) for k, v in m if k != key]
            m[:] = rest + [(key, value)]
        return result

    def _proxy_add_header_map_value(self, caller, kind, kptr, ksize, vptr, vsize):
        key = self._read(caller, kptr, ksize).decode("latin-1").lower()
        value = self._read(caller, vptr, vsize).decode("latin-1")
        m, result = self._writable_map(kind, f"map={kind} +{key}={value}")
        if m is not None:
            m.append((key, value))
        return result

    def _proxy_remove_header_map_value(self, caller, kind, kptr, ksize):
        key = self._read(caller, kptr, ksize).decode("latin-1").lower()
        m, result = self._writable_map(kind, f"map={kind} -{key}")
        if m is not None:
            m[:] = [(k, v) for k, v in m if k != key]
        return result

    def _proxy_get_header_map_pairs(self, caller, kind, ptr_ptr, size_ptr):
        if kind > 7:
            return Status.BAD_ARGUMENT, f"map={kind}"
        m = self._map(kind) or []
        self._return_bytes(caller, serialize_pairs(m), ptr_ptr, size_ptr)
        return Status.OK, f"map={kind}"

    def _proxy_set_header_map_pairs(self, caller, kind, ptr, size):
        m, result = self._writable_map(kind, f"map={kind} (all)")
        if m is not None:
            m[:] = deserialize_pairs(self._read(caller, ptr, size))
        return result

    # ---- properties, shared data, metrics [envoy getProperty/setProperty, cpp shared_data] ----

    def _proxy_get_property(self, caller, ptr, size, ptr_ptr, size_ptr):
        path = tuple(self._read(caller, ptr, size).decode("utf-8", "replace").split("\0"))
        detail = "/".join(path)
        if not self.root_property_reads and self._stream_of() is None and path != ("plugin_root_id",):
            return Status.BAD_ARGUMENT, detail
        value = self.properties.get(path)
        if value is None:
            return Status.NOT_FOUND, detail
        self._return_bytes(caller, value, ptr_ptr, size_ptr)
        return Status.OK, detail

    def _proxy_set_property(self, caller, ptr, size, vptr, vsize):
        path = self._read(caller, ptr, size).decode("utf-8", "replace")
        stream = self._stream_of()
        # [envoy setProperty]: NotFound without a stream (no stream info).
        if stream is None:
            return Status.NOT_FOUND, path
        stream.properties[path] = self._read(caller, vptr, vsize)
        return Status.OK, path

    def _proxy_get_shared_data(self, caller, kptr, ksize, ptr_ptr, size_ptr, cas_ptr):
        key = self._read(caller, kptr, ksize)
        entry = self.shared.get(key)
        if entry is None:
            return Status.NOT_FOUND, key.decode("latin-1")
        self._return_bytes(caller, entry[0], ptr_ptr, size_ptr)
        self._put_u32(caller, cas_ptr, entry[1])
        return Status.OK, key.decode("latin-1")

    def _proxy_set_shared_data(self, caller, kptr, ksize, vptr, vsize, cas):
        key = self._read(caller, kptr, ksize)
        entry = self.shared.get(key)
        if cas and entry is not None and entry[1] != cas:
            return Status.CAS_MISMATCH, key.decode("latin-1")
        # [cpp shared_data.cc set]: a key that does not exist is created
        # whatever `cas` says; every write takes the next global cas.
        self.shared[key] = (self._read(caller, vptr, vsize), self.next_cas)
        self.next_cas = self.next_cas % 0xFFFFFFFF + 1
        return Status.OK, key.decode("latin-1")

    def _proxy_set_tick_period_milliseconds(self, caller, period):
        # [cpp exports.cc set_tick_period_milliseconds]: the timer belongs
        # to the root context of whichever context calls.
        self.tick_period_ms = period
        return Status.OK, f"{period}ms"

    def tick(self) -> None:
        """The root context's timer fires once (`proxy_on_tick`)."""
        self._invoke("proxy_on_tick", ROOT_ID, "on_tick", ROOT_ID)

    def _proxy_define_metric(self, caller, kind, ptr, size, id_ptr):
        name = self._read(caller, ptr, size).decode("utf-8", "replace")
        if kind > 2:
            return Status.BAD_ARGUMENT, name
        metric_id = len(self.metrics) + 1
        self.metrics[metric_id] = (kind, name, 0)
        self._put_u32(caller, id_ptr, metric_id)
        return Status.OK, name

    def _proxy_increment_metric(self, caller, metric_id, offset):
        if metric_id not in self.metrics:
            return Status.NOT_FOUND, f"id={metric_id}"
        kind, name, value = self.metrics[metric_id]
        # [envoy incrementMetric]: a counter only goes up.
        if kind == 0 and offset <= 0:
            return Status.BAD_ARGUMENT, f"{name} {offset}"
        self.metrics[metric_id] = (kind, name, value + offset)
        return Status.OK, f"{name} +{offset}"

    def _proxy_record_metric(self, caller, metric_id, value):
        if metric_id not in self.metrics:
            return Status.NOT_FOUND, f"id={metric_id}"
        kind, name, _ = self.metrics[metric_id]
        self.metrics[metric_id] = (kind, name, value)
        return Status.OK, f"{name}={value}"

    # ---- stream control [envoy continueStream, sendLocalResponse, httpCall] ----

    def _proxy_continue_stream(self, caller, kind):
        stream = self._stream_of()
        if kind > STREAM_UPSTREAM:
            return Status.BAD_ARGUMENT, f"stream={kind}"
        if kind == STREAM_UPSTREAM:
            return Status.UNIMPLEMENTED, f"stream={kind}"
        if stream is not None and kind in (STREAM_REQUEST, STREAM_RESPONSE):
            d = stream.requests if kind == STREAM_REQUEST else stream.responses
            if stream.reentrant_resume:
                # A host that resumes inside the call and, the stream having
                # ended, logs and destroys it there too (proxy-wasm-rust-sdk #43).
                stream._resume(d)
                if stream.client.state != "open" and stream.server.state != "open":
                    stream._reenter(caller, "proxy_on_log")
                    stream._reenter(caller, "proxy_on_done")
            else:
                # Envoy: "We are in a reentrant call, so defer."
                self.after_call.append(lambda: stream._resume(d))
        return Status.OK, f"stream={kind}"

    def _proxy_send_local_response(self, caller, code, dptr, dsize, bptr, bsize, hptr, hsize, grpc):
        stream = self._stream_of()
        body = self._read(caller, bptr, bsize)
        if stream is not None:
            self.after_call.append(lambda: stream._local_reply(code, body))
        return Status.OK, f"{code}"

    def _proxy_http_call(self, caller, uptr, usize, hptr, hsize, bptr, bsize, tptr, tsize, timeout, token_ptr):
        cluster = self._read(caller, uptr, usize).decode("utf-8", "replace")
        headers = deserialize_pairs(self._read(caller, hptr, hsize))
        names = {k for k, _ in headers}
        # [envoy httpCall]: unknown cluster or missing :path/:method/:authority.
        if cluster not in self.clusters or not {":path", ":method", ":authority"} <= names:
            return Status.BAD_ARGUMENT, cluster
        token = self.next_token
        self.next_token += 1
        context = self.effective if self.effective is not None else ROOT_ID
        self.callouts[token] = Callout(token, context, cluster, headers, self._read(caller, bptr, bsize), timeout)
        self._put_u32(caller, token_ptr, token)
        return Status.OK, f"{cluster} token={token}"

    def _proxy_close_stream(self, caller, kind):
        stream = self._stream_of()
        if stream is not None:
            self.after_call.append(stream.reset)
        return Status.OK, f"stream={kind}"


class Stream:
    """One HTTP stream through the filter: the script drives it with the
    upstream's and the client's events; `client` and `server` collect what
    leaves the filter."""

    def __init__(self, vm: Vm, *, reentrant_resume: bool = False) -> None:
        self.vm = vm
        self.id = vm.next_id
        vm.next_id += 1
        self.client = Side()
        self.server = Side()
        self.requests = Direction(True, self.server)
        self.responses = Direction(False, self.client)
        self.properties: dict[str, bytes] = {}
        self.created = False
        self.destroyed = False
        self.deleted = False
        self.logged = False
        self.logging = False
        self.reentrant_resume = reentrant_resume

    # -- callbacks --

    def _call(self, export: str, *args: int) -> int:
        # Envoy skips the filter until its context exists (`if
        # (!in_vm_context_created_) return Continue` in every encode*/decode*).
        if self.deleted or not self.created:
            return CONTINUE
        return self.vm._invoke(export, self.id, export.removeprefix("proxy_"), self.id, *args)

    def _create(self) -> None:
        # Envoy calls onCreate from decodeHeaders [envoy, cpp onCreate].
        if not self.created:
            self.created = True
            self.vm.streams[self.id] = self
            self.vm._invoke("proxy_on_context_create", self.id, "on_context_create", self.id, ROOT_ID)

    def headers(self, d: Direction, pairs: Pairs, end: bool) -> None:
        if d.request:
            self._create()
        if self._gone():
            return
        d.headers = [(k.lower(), v) for k, v in pairs]
        d.headers_live = True
        export = "proxy_on_request_headers" if d.request else "proxy_on_response_headers"
        result = self._call(export, len(d.headers), int(end))
        if self._gone():
            return
        if end:
            d.end_seen = True
        if result == CONTINUE:
            d.headers_live = False
            self._send_headers(d)
            if end:
                self._finish(d)
        elif not self.vm.allow_on_headers_stop_iteration:
            d.stopped_all = True

    def body(self, d: Direction, data: bytes, end: bool) -> None:
        if self._gone():
            return
        if d.stopped_all:
            d.queued += data
            d.queued_end = d.queued_end or end
            return
        self._body_callback(d, bytearray(data), end)

    def _body_callback(self, d: Direction, data: bytearray, end: bool) -> None:
        # [envoy encodeData]: while buffering, the new chunk is moved into
        # the buffered body first (addEncodedData), and the filter sees the
        # whole of it.
        if d.buffering:
            d.buffered += data
            data = bytearray()
            if len(d.buffered) > self.vm.buffer_limit:
                self._over_limit(d)
                return
        d.data = data
        d.end_seen = end
        size = len(d.body_buffer() or b"")
        export = "proxy_on_request_body" if d.request else "proxy_on_response_body"
        result = self._call(export, size, int(end))
        if self._gone():
            return
        held = d.body_buffer()
        d.data = None
        if result == CONTINUE:
            d.buffering = False
            d.buffered = bytearray()
            self._send_headers(d)
            d.peer.body += held or b""
            if end:
                self._finish(d)
        else:
            # StopIterationAndBuffer: Envoy keeps the bytes [filter].
            if not d.buffering:
                d.buffering = True
                d.buffered = bytearray(held or b"")
            if len(d.buffered) > self.vm.buffer_limit:
                self._over_limit(d)

    def trailers(self, d: Direction, pairs: Pairs) -> None:
        if self._gone():
            return
        if d.stopped_all:
            d.queued_trailers = list(pairs)
            return
        d.trailers = list(pairs)
        d.trailers_live = True
        d.end_seen = True
        export = "proxy_on_request_trailers" if d.request else "proxy_on_response_trailers"
        result = self._call(export, len(pairs))
        if self._gone():
            return
        d.trailers_live = False
        if result == CONTINUE:
            self._release(d)
            self._send_trailers(d)
        else:
            d.paused_trailers = True

    def callout_reply(self, reply: Reply) -> bool:
        """Answers this stream's oldest unanswered callout; False if none."""
        if self._gone():
            return False
        pending = [c for c in self.vm.callouts.values() if c.context == self.id and not c.answered]
        if not pending:
            return False
        callout = pending[0]
        callout.answered = True
        if reply.status is None:
            delivered = Reply(None)
            args = (callout.token, 0, 0, 0)
        else:
            delivered = Reply(reply.status, reply.body, [(":status", str(reply.status))] + list(reply.headers))
            args = (callout.token, len(delivered.headers), len(delivered.body), 0)
        # Calls go out on the root context (exports.cc http_call uses
        # `root_context()`), so the reply comes back on it; the SDK's
        # dispatcher then sets the stream as the effective context.
        self.vm.call_response = delivered
        try:
            self.vm._invoke("proxy_on_http_call_response", ROOT_ID, "on_http_call_response", ROOT_ID, *args)
        finally:
            self.vm.call_response = None
        return True

    def log(self) -> None:
        """proxy_on_log: Envoy calls it as the stream's access logger
        [envoy Context::log], normally once, when the stream completes."""
        if self._gone() or not self.created:
            return
        self.logging = True
        try:
            self._call("proxy_on_log")
        finally:
            self.logging = False
        self.logged = True

    def reset(self) -> None:
        """The stream is destroyed mid-way (client or upstream reset):
        whatever has not left the filter is dropped, both peers see a
        reset, and Envoy destroys the context [envoy onDestroy: onDone, onDelete]."""
        for side in (self.client, self.server):
            if side.state == "open":
                side.state = "reset"
        self.close()

    def vanish(self) -> None:
        """The host no longer has this stream (see the set_effective_context
        fault): both peers saw a reset, its callouts count as canceled, and
        its context ends once the current VM call returned."""
        for side in (self.client, self.server):
            if side.state == "open":
                side.state = "reset"
        for c in self.vm.callouts.values():
            if c.context == self.id:
                c.canceled = True
        self.vm.after_call.append(self.close)

    def close(self) -> None:
        """End of the stream's life: access log, then onDestroy (on_done,
        then on_delete when on_done returns true) [envoy log, onDestroy]."""
        if not self.created or self.deleted:
            return
        if not self.logged and not self.destroyed:
            self.log()
        if not self.destroyed:
            self.destroyed = True
            done = self._call("proxy_on_done")
            if not done:
                return
        self._delete()

    def _delete(self) -> None:
        if self.deleted:
            return
        self._call("proxy_on_delete")
        self.deleted = True
        self.vm.streams.pop(self.id, None)
        # ~Context cancels outstanding callouts [envoy Context::~Context].
        for c in self.vm.callouts.values():
            if c.context == self.id and not c.answered:
                c.answered = c.canceled = True

    # -- helpers --

    def _gone(self) -> bool:
        return self.destroyed or self.deleted or self.vm.trap is not None

    def _send_headers(self, d: Direction) -> None:
        if not d.headers_sent and d.headers is not None:
            d.headers_sent = True
            d.peer.headers = list(d.headers)

    def _finish(self, d: Direction) -> None:
        d.finished = True
        if d.peer.state == "open":
            d.peer.state = "complete"

    def _send_trailers(self, d: Direction) -> None:
        d.peer.trailers = list(d.trailers or [])
        self._finish(d)

    def _release(self, d: Direction) -> None:
        """Continue after a pause: held headers, then the buffered body."""
        self._send_headers(d)
        if d.buffering:
            d.peer.body += d.buffered
            d.buffering = False
            d.buffered = bytearray()

    def _resume(self, d: Direction) -> None:
        """continueEncoding()/continueDecoding() [filter]: held headers
        and body go on; a filter stopped on all iteration now gets the
        queued body and trailers; a stream paused at its end finishes."""
        if self._gone():
            return
        if d.stopped_all:
            d.stopped_all = False
            d.headers_live = False
            self._send_headers(d)
            queued, end, trailers = d.queued, d.queued_end, d.queued_trailers
            d.queued, d.queued_end, d.queued_trailers = bytearray(), False, None
            if queued or end:
                self._body_callback(d, queued, end and trailers is None)
            if trailers is not None and not self._gone():
                self.trailers(d, trailers)
            elif d.end_seen and not queued and not end:
                self._finish(d)  # headers-only, held, now released
            return
        self._release(d)
        if d.paused_trailers:
            d.paused_trailers = False
            self._send_trailers(d)
        elif d.end_seen and d.trailers is None:
            self._finish(d)

    def _over_limit(self, d: Direction) -> None:
        """Buffered body past the limit: a 413 on requests; on responses a
        500 before headers left, else a reset [filter StopIterationAndBuffer]."""
        if d.request:
            self._local_reply(413, b"Payload Too Large")
        elif not d.headers_sent:
            self._local_reply(500, b"Internal Server Error")
        else:
            self.reset()

    def _local_reply(self, code: int, body: bytes) -> None:
        if self.client.headers is None and not self.responses.headers_sent:
            self.client.headers = [(":status", str(code))]
            self.client.body = bytearray(body)
            self.client.local_reply = code
            self.client.state = "complete"
            if self.server.state == "open":
                self.server.state = "reset"
            self.close()
        else:
            self.reset()

    def _reenter(self, caller, export: str) -> None:
        """Calls on_log / on_done from inside a host call (see Reentry)."""
        if export == "proxy_on_log":
            if not self.created:
                return
            self.logging = True
            try:
                self.vm.exports[export](caller, self.id)
            finally:
                self.logging = False
            self.logged = True
        elif export == "proxy_on_done" and not self.destroyed:
            for side in (self.client, self.server):
                if side.state == "open":
                    side.state = "reset"
            self.destroyed = True
            self.vm.exports[export](caller, self.id)
            self.vm.after_call.append(self._delete)


def serialize_pairs(pairs: Pairs) -> bytes:
    """The ABI's map encoding: count, then (key length, value length) per
    pair, then each key and value NUL-terminated [spec "Maps with HTTP fields"]."""
    out = [struct.pack("<I", len(pairs))]
    encoded = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in pairs]
    for k, v in encoded:
        out.append(struct.pack("<II", len(k), len(v)))
    for k, v in encoded:
        out.append(k + b"\0" + v + b"\0")
    return b"".join(out)


def deserialize_pairs(data: bytes) -> Pairs:
    if len(data) < 4:
        return []
    (count,) = struct.unpack_from("<I", data, 0)
    sizes = [struct.unpack_from("<II", data, 4 + 8 * i) for i in range(count)]
    pos = 4 + 8 * count
    pairs = []
    for klen, vlen in sizes:
        k = data[pos : pos + klen]
        pos += klen + 1
        v = data[pos : pos + vlen]
        pos += vlen + 1
        pairs.append((k.decode("latin-1"), v.decode("latin-1")))
    return pairs


# ---- scripts: one stream as data ----

@dataclass
class Outcome:
    client: Side
    server: Side
    trap: Optional[str]
    calls: list[Call]
    callouts: list[Callout]
    logs: list[tuple[int, str]]
    unexpected: list[str]
    stream: Stream


def play(vm: Vm, script: list[tuple], *, reentrant_resume: bool = False, settle: Optional[Reply] = None) -> Outcome:
    """Runs one stream on `vm` from a script of events:

    ("request_headers", pairs, end)   ("response_headers", pairs, end)
    ("request_body", bytes, end)      ("response_body", bytes, end)
    ("request_trailers", pairs)       ("response_trailers", pairs)
    ("reply", Reply)   the stream's oldest callout is answered
    ("log",)           proxy_on_log now (early, on a host that logs mid-stream)
    ("reset",)         the stream is destroyed now
    ("close",)         end of the stream's life now (access log, on_done, on_delete)

    After the last event, callouts still unanswered get `settle` (Envoy's
    async client always answers in the end: at the latest its timeout, a
    504), then the stream is closed (as Envoy does once both directions
    ended, or when its idle timeout fires on a stalled one). A trap ends
    the script; `Outcome.trap` says where."""
    global played
    played += 1
    s = Stream(vm, reentrant_resume=reentrant_resume)
    try:
        for position, event in enumerate(script):
            vm.event = position
            kind = event[0]
            if kind == "request_headers":
                s.headers(s.requests, event[1], event[2])
            elif kind == "request_body":
                s.body(s.requests, event[1], event[2])
            elif kind == "request_trailers":
                s.trailers(s.requests, event[1])
            elif kind == "response_headers":
                s.headers(s.responses, event[1], event[2])
            elif kind == "response_body":
                s.body(s.responses, event[1], event[2])
            elif kind == "response_trailers":
                s.trailers(s.responses, event[1])
            elif kind == "reply":
                s.callout_reply(event[1])
            elif kind == "log":
                s.log()
            elif kind == "reset":
                s.reset()
            elif kind == "close":
                s.close()
            else:
                raise ValueError(f"unknown event {kind!r}")
        vm.event = len(script)
        while settle is not None and s.callout_reply(settle):
            pass
        s.close()
    except Trapped:
        pass
    return Outcome(s.client, s.server, vm.trap, list(vm.calls), list(vm.callouts.values()),
                   list(vm.logs), list(vm.unexpected), s)


def without_plugin(script: list[tuple]) -> tuple[Side, Side]:
    """What the client and the server receive through the same host with
    no plugin: every byte as sent, in order, up to a reset."""
    client, server = Side(), Side()
    for event in script:
        kind = event[0]
        if kind == "reset":
            for side in (client, server):
                if side.state == "open":
                    side.state = "reset"
            break
        side = server if kind.startswith("request") else client
        if side.state != "open":
            continue
        if kind.endswith("_headers"):
            side.headers = [(k.lower(), v) for k, v in event[1]]
            if event[2]:
                side.state = "complete"
        elif kind.endswith("_body"):
            side.body += event[1]
            if event[2]:
                side.state = "complete"
        elif kind.endswith("_trailers"):
            side.trailers = list(event[1])
            side.state = "complete"
    return client, server
