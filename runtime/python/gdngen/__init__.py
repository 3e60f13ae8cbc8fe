"""gdngen: Gated Delta Net prefill on sm_90a, through libgdn (ctypes).

    import gdngen
    o, final_state = gdngen.chunk_gated_delta_rule(
        q, k, v, alpha=alpha, beta=beta, scale=0.73,
        initial_state=h0, output_final_state=True, cu_seqlens=cu)

Shapes (no batch dimension; sequences are packed along T):
    q [T, Hq, 128], k [T, Hk, 128], v [T, Hv, 128]   bf16, CUDA, contiguous
    alpha, beta [T, Ho] fp32 (alpha is the decay itself, not its log)
    cu_seqlens [N + 1] int32 or int64 on the same device (None: one sequence)
    initial_state, final_state [N, Ho, 128, 128] fp32 ([V, K])
    o [T, Ho, 128] bf16, with Ho = max(Hq, Hv)
The call runs on torch's current stream and never synchronises, so it can be
captured in a CUDA graph. Bad input raises ValueError with libgdn's message.
The library is found through $GDNGEN_LIB, else the libgdn.so that
`make install` put beside this package, else build/libgdn.so of this
checkout.
"""
import ctypes
import math
import os
import threading

__all__ = ["chunk_gated_delta_rule", "query_route", "version", "build_id", "value_operands"]

_VERSION = "0.1.0"
_ROUTES = {0: "generic", 1: "register_replay", 2: "predecessor_replay"}
_STATUS_INVALID = (1, 2)  # invalid argument, unsupported


class _Args(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint64) for n in
                ("q", "k", "v", "alpha", "beta", "cu_seqlens", "initial_state",
                 "final_state", "o")] + [
        ("T", ctypes.c_int64), ("N", ctypes.c_int32), ("Hq", ctypes.c_int32),
        ("Hk", ctypes.c_int32), ("Hv", ctypes.c_int32), ("head_dim", ctypes.c_int32),
        ("scale", ctypes.c_float), ("force_generic", ctypes.c_int32)]


def _lib_path():
    env = os.environ.get("GDNGEN_LIB")
    if env:
        return env
    try:  # an installed package: `make install` wrote _install.py beside it
        from ._install import LIB
        return LIB
    except ImportError:
        pass
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.normpath(os.path.join(here, "..", "..", "..", "build", "libgdn.so"))


class _Lib:
    """The loaded library and one handle per device, made on first use."""

    def __init__(self):
        self.lib = ctypes.CDLL(_lib_path())
        L = self.lib
        L.gdn_create_ex.argtypes = [ctypes.c_int, ctypes.c_uint, ctypes.POINTER(ctypes.c_void_p),
                                    ctypes.c_char_p, ctypes.c_size_t]
        L.gdn_create_ex.restype = ctypes.c_int
        L.gdn_prefill.argtypes = [ctypes.c_void_p, ctypes.POINTER(_Args), ctypes.c_uint64,
                                  ctypes.c_size_t, ctypes.c_void_p]
        L.gdn_prefill.restype = ctypes.c_int
        L.gdn_workspace_size.argtypes = [ctypes.c_void_p, ctypes.POINTER(_Args),
                                         ctypes.POINTER(ctypes.c_size_t)]
        L.gdn_workspace_size.restype = ctypes.c_int
        L.gdn_query_route.argtypes = [ctypes.c_void_p, ctypes.POINTER(_Args),
                                      ctypes.POINTER(ctypes.c_int)]
        L.gdn_query_route.restype = ctypes.c_int
        L.gdn_last_error.argtypes = [ctypes.c_void_p]
        L.gdn_last_error.restype = ctypes.c_char_p
        L.gdn_status_string.argtypes = [ctypes.c_int]
        L.gdn_status_string.restype = ctypes.c_char_p
        L.gdn_version.argtypes = []
        L.gdn_version.restype = ctypes.c_char_p
        L.gdn_value_operands_f16.argtypes = []
        L.gdn_value_operands_f16.restype = ctypes.c_int
        self.handles = {}
        self.ws_sizes = {}
        self.lock = threading.Lock()

    def handle(self, device):
        h = self.handles.get(device)  # entries are added once and never change
        if h is not None:
            return h
        with self.lock:
            h = self.handles.get(device)
            if h is None:
                out = ctypes.c_void_p()
                err = ctypes.create_string_buffer(512)
                s = self.lib.gdn_create_ex(device, 0, ctypes.byref(out), err, 512)
                if s != 0:
                    raise RuntimeError("gdngen: cannot create a handle on cuda:%d: %s"
                                       % (device, err.value.decode()))
                h = self.handles[device] = out
            return h

    def workspace_bytes(self, h, a, dev):
        """gdn_workspace_size for a's sizes and options, remembered per device:
        it depends on nothing else (not on pointers or the scale). gdn_prefill
        checks it again, so a stale entry could only make a call fail."""
        key = (dev, a.T, a.N, a.Hq, a.Hk, a.Hv, bool(a.alpha), bool(a.beta),
               bool(a.cu_seqlens), bool(a.initial_state), bool(a.final_state),
               a.force_generic)
        n = self.ws_sizes.get(key)
        if n is None:
            need = ctypes.c_size_t(0)
            s, msg = self.call(h, self.lib.gdn_workspace_size, ctypes.byref(a),
                               ctypes.byref(need))
            if s != 0:
                self.fail(s, msg, "chunk_gated_delta_rule")
            n = need.value
            if len(self.ws_sizes) >= 256:  # many shapes: start over, stay small
                self.ws_sizes.clear()
            self.ws_sizes[key] = n
        return n

    def call(self, h, fn, *args):
        """Runs a libgdn call; its status and the handle's message are read
        under one lock, so threads cannot see each other's errors."""
        with self.lock:
            s = fn(h, *args)
            msg = self.lib.gdn_last_error(h).decode() if s != 0 else ""
        return s, msg

    def fail(self, status, msg, what):
        kind = self.lib.gdn_status_string(status).decode()
        if status in _STATUS_INVALID:
            raise ValueError("gdngen.%s: %s" % (what, msg))
        raise RuntimeError("gdngen.%s: %s: %s" % (what, kind, msg))


_lib = None
_lib_lock = threading.Lock()


def _get_lib():
    global _lib
    if _lib is not None:  # set once, never reset: no lock needed to read it
        return _lib
    with _lib_lock:
        if _lib is None:
            _lib = _Lib()
        return _lib


def version():
    return _VERSION


def build_id():
    """What the loaded libgdn carries: "gdngen VERSION, kernels HASH" (HASH of
    the embedded CUDA sources). Loads the library; needs no GPU."""
    return _get_lib().lib.gdn_version().decode()


def value_operands():
    """The format the loaded kernels round the value operands P, W, X and Ub
    to, "fp16" or "bf16" (docs/numerics.md). Loads the library; needs no GPU."""
    return "fp16" if _get_lib().lib.gdn_value_operands_f16() else "bf16"


def _need(cond, msg):
    if not cond:
        raise ValueError("gdngen.chunk_gated_delta_rule: " + msg)


def _check_tensor(name, t, dtype, shape, device):
    """Raises ValueError saying what is wrong with t, if anything: the
    checks one by one, for calls that _fast does not take."""
    import torch
    _need(isinstance(t, torch.Tensor), "%s must be a torch.Tensor" % name)
    _need(t.is_cuda, "%s must be on a CUDA device" % name)
    _need(t.device == device, "%s is on %s, q on %s" % (name, t.device, device))
    _need(t.dtype == dtype, "%s must be %s, not %s" % (name, dtype, t.dtype))
    _need(tuple(t.shape) == tuple(shape),
          "%s has shape %s, expected %s" % (name, tuple(t.shape), tuple(shape)))
    _need(t.is_contiguous(), "%s must be contiguous" % name)


def _ok(t, dtype, shape, dev):
    """The cheap test of one tensor: every call runs it, and its cost is host
    time (get_device() is -1 on the CPU and reads no device object)."""
    return (t.dtype is dtype and t.get_device() == dev and t.shape == shape
            and t.is_contiguous())


def _fast(q, k, v, alpha, beta, scale, initial_state, cu_seqlens, force_generic):
    """_prepare's result for a well-formed call with int32 cu_seqlens, or
    None: then _prepare runs the checks one by one and says what is wrong.
    The same tests as _prepare's, with fewer tensor attribute reads."""
    import torch
    if not isinstance(q, torch.Tensor):
        return None
    try:
        T, Hq, D = q.shape
        Hk, Hv = k.shape[1], v.shape[1]
        dev = q.get_device()
    except (AttributeError, TypeError, ValueError, IndexError):
        return None
    bf16, f32 = torch.bfloat16, torch.float32
    Ho = max(Hq, Hv)
    if not (D == 128 and dev >= 0 and _ok(q, bf16, (T, Hq, 128), dev)
            and isinstance(k, torch.Tensor) and _ok(k, bf16, (T, Hk, 128), dev)
            and isinstance(v, torch.Tensor) and _ok(v, bf16, (T, Hv, 128), dev)):
        return None
    for t in (alpha, beta):
        if t is not None and not (isinstance(t, torch.Tensor) and _ok(t, f32, (T, Ho), dev)):
            return None
    N = 1
    if cu_seqlens is not None:
        if not (isinstance(cu_seqlens, torch.Tensor) and cu_seqlens.dim() == 1
                and _ok(cu_seqlens, torch.int32, cu_seqlens.shape, dev)):
            return None
        N = cu_seqlens.shape[0] - 1
        if N < 1:
            return None
    if initial_state is not None and not (isinstance(initial_state, torch.Tensor) and _ok(
            initial_state, f32, (N, Ho, 128, 128), dev)):
        return None
    if scale is None or not math.isfinite(ctypes.c_float(float(scale)).value):
        return None
    a = _args(q, k, v, alpha, beta, cu_seqlens, initial_state, T, N, Hq, Hk, Hv, scale,
              force_generic)
    return a, [], T, N, Ho


def _args(q, k, v, alpha, beta, cu_seqlens, initial_state, T, N, Hq, Hk, Hv, scale,
          force_generic):
    """The argument struct of checked tensors (o and final_state still 0)."""
    def ptr(t):
        return t.data_ptr() if t is not None else 0
    return _Args(q.data_ptr(), k.data_ptr(), v.data_ptr(), ptr(alpha), ptr(beta),
                 ptr(cu_seqlens), ptr(initial_state), 0, 0, T, N, Hq, Hk, Hv, 128,
                 float(scale), 1 if force_generic else 0)


def _prepare(q, k, v, alpha, beta, scale, initial_state, cu_seqlens, force_generic):
    """Checks the tensors; returns (args struct, keep-alive list, T, N, Ho).
    One cheap test per tensor first (_fast); the checks one by one only for
    a call it does not take."""
    got = _fast(q, k, v, alpha, beta, scale, initial_state, cu_seqlens, force_generic)
    if got is not None:
        return got
    import torch
    for name, t in (("q", q), ("k", k), ("v", v)):
        _need(isinstance(t, torch.Tensor) and t.dim() == 3,
              "%s must be a 3-D tensor [T, H, 128]" % name)
    T, Hq, D = q.shape
    Hk, Hv = k.shape[1], v.shape[1]
    _need(D == 128, "head dimension is %d; only 128 is supported" % D)
    dev = q.device
    _check_tensor("q", q, torch.bfloat16, (T, Hq, 128), dev)
    _check_tensor("k", k, torch.bfloat16, (T, Hk, 128), dev)
    _check_tensor("v", v, torch.bfloat16, (T, Hv, 128), dev)
    Ho = max(Hq, Hv)
    keep = []
    if cu_seqlens is None:
        N = 1
    else:
        _need(isinstance(cu_seqlens, torch.Tensor) and cu_seqlens.dim() == 1
              and cu_seqlens.numel() >= 2, "cu_seqlens must be a 1-D tensor [N + 1]")
        _need(cu_seqlens.dtype in (torch.int32, torch.int64),
              "cu_seqlens must be int32 or int64, not %s" % cu_seqlens.dtype)
        _need(cu_seqlens.device == dev, "cu_seqlens must be on %s" % dev)
        N = cu_seqlens.numel() - 1
        if cu_seqlens.dtype != torch.int32:
            cu_seqlens = cu_seqlens.to(torch.int32)  # on the device: no host sync
        cu_seqlens = cu_seqlens.contiguous()
        keep.append(cu_seqlens)
    for name, t in (("alpha", alpha), ("beta", beta)):
        if t is not None:
            _check_tensor(name, t, torch.float32, (T, Ho), dev)
    if initial_state is not None:
        _check_tensor("initial_state", initial_state, torch.float32, (N, Ho, 128, 128), dev)
    if scale is None:
        scale = 1.0 / math.sqrt(128)
    # Finite as the fp32 the kernels receive, not only as a Python float.
    _need(math.isfinite(ctypes.c_float(float(scale)).value),
          "scale must be finite in fp32, not %r" % (scale,))
    a = _args(q, k, v, alpha, beta, cu_seqlens, initial_state, T, N, Hq, Hk, Hv, scale,
              force_generic)
    return a, keep, T, N, Ho


def chunk_gated_delta_rule(q, k, v, alpha=None, beta=None, scale=None, initial_state=None,
                           output_final_state=False, cu_seqlens=None, force_generic=False):
    """Runs the GDN prefill; returns (o [T, Ho, 128] bf16, final_state or None).

    Eager calls go straight to libgdn; under torch.compile the call is the
    opaque custom op torch.ops.gdngen.chunk_gated_delta_rule (registered at
    import), whose fake implementation gives the output shapes."""
    import torch
    if scale is None:
        scale = 1.0 / math.sqrt(128)
    if torch.compiler.is_compiling():
        o, final = _OP(q, k, v, alpha, beta, float(scale), initial_state,
                       bool(output_final_state), cu_seqlens, bool(force_generic))
        return o, (final if output_final_state else None)
    return _run(q, k, v, alpha, beta, scale, initial_state, output_final_state, cu_seqlens,
                force_generic)


def _make_op():
    """gdngen::chunk_gated_delta_rule as a torch custom op. Registered once,
    when this module is imported, so compiled code never runs Python
    bookkeeping (a lock, a registry) inside the traced region."""
    import torch
    from typing import Optional, Tuple
    Tensor = torch.Tensor

    @torch.library.custom_op("gdngen::chunk_gated_delta_rule", mutates_args=())
    def op(q: Tensor, k: Tensor, v: Tensor, alpha: Optional[Tensor], beta: Optional[Tensor],
           scale: float, initial_state: Optional[Tensor], output_final_state: bool,
           cu_seqlens: Optional[Tensor], force_generic: bool) -> Tuple[Tensor, Tensor]:
        o, final = _run(q, k, v, alpha, beta, scale, initial_state, output_final_state,
                        cu_seqlens, force_generic)
        if final is None:  # an op returns tensors: an empty one stands for None
            final = q.new_empty((0,), dtype=torch.float32)
        return o, final

    @op.register_fake
    def _(q, k, v, alpha, beta, scale, initial_state, output_final_state, cu_seqlens,
          force_generic):
        T, Hq, Hv = q.shape[0], q.shape[1], v.shape[1]
        Ho = max(Hq, Hv)
        N = 1 if cu_seqlens is None else cu_seqlens.shape[0] - 1
        o = q.new_empty((T, Ho, 128), dtype=torch.bfloat16)
        shape = (N, Ho, 128, 128) if output_final_state else (0,)
        return o, q.new_empty(shape, dtype=torch.float32)

    return op


def _run(q, k, v, alpha, beta, scale, initial_state, output_final_state, cu_seqlens,
         force_generic):
    import torch
    a, keep, T, N, Ho = _prepare(q, k, v, alpha, beta, scale, initial_state, cu_seqlens,
                                 force_generic)
    lib = _get_lib()
    dev = q.get_device()
    h = lib.handle(dev)
    o = q.new_empty((T, Ho, 128), dtype=torch.bfloat16)
    final = None
    if output_final_state:
        final = q.new_empty((N, Ho, 128, 128), dtype=torch.float32)
    if T == 0:  # nothing to run: the final state is the initial one
        if final is not None:
            final.copy_(initial_state) if initial_state is not None else final.zero_()
        return o, final
    a.o = o.data_ptr()
    a.final_state = final.data_ptr() if final is not None else 0
    need = lib.workspace_bytes(h, a, dev)
    # torch's caching allocator: graph-capture safe, freed with the tensor.
    ws = q.new_empty((max(need, 16),), dtype=torch.uint8)
    s, msg = lib.call(h, lib.lib.gdn_prefill, ctypes.byref(a), ws.data_ptr(), need,
                      _raw_stream(dev))
    if s != 0:
        lib.fail(s, msg, "chunk_gated_delta_rule")
    del keep, ws  # safe: the stream orders their reuse after this call's kernels
    return o, final


def _raw_stream(dev):
    """torch's current stream on device dev, as the CUstream handle. The
    private accessor Triton uses costs 0.1 us against about 3 for a Stream
    object; the public one stays the fallback."""
    import torch
    get = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if get is not None:
        return get(dev)
    return torch.cuda.current_stream(dev).cuda_stream


def query_route(q, k, v, alpha=None, beta=None, scale=None, initial_state=None,
                output_final_state=False, cu_seqlens=None, force_generic=False):
    """The route chunk_gated_delta_rule would take for these arguments."""
    import torch
    a, keep, T, N, Ho = _prepare(q, k, v, alpha, beta, scale, initial_state, cu_seqlens,
                                 force_generic)
    lib = _get_lib()
    h = lib.handle(q.device.index if q.device.index is not None else torch.cuda.current_device())
    a.o = 16  # a placeholder: only its presence and alignment are checked
    a.final_state = 16 if output_final_state else 0
    route = ctypes.c_int(0)
    s, msg = lib.call(h, lib.lib.gdn_query_route, ctypes.byref(a), ctypes.byref(route))
    if s != 0:
        lib.fail(s, msg, "query_route")
    return _ROUTES.get(route.value, "unknown")

try:  # the op exists whenever torch does; the binding needs torch anyway
    import torch as _torch  # noqa: F401
    _OP = _make_op()
except ImportError:
    _OP = None
