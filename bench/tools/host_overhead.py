#!/usr/bin/env python3
"""Where a Python call's host time goes, on the benchmark rows.

    PYTHONPATH=runtime/python python3 bench/tools/host_overhead.py [ROW-SUBSTRING] [--profile]

Per row (inputs as bench/harness.py makes them):
  callable   CUDA events around 100 calls after 20 warm-ups, as the harness times it;
  host       wall time of enqueuing a call (batches of 30 calls, each batch
             synchronised after it is timed, so the launch queue never fills);
  prefill    the same for libgdn's gdn_prefill alone, through ctypes, with
             the arguments and the workspace made once;
then, once, the pieces a call is made of, each timed alone (median of
batches), and with --profile cProfile's top entries for one row's calls.
Needs a GPU.
"""
import cProfile
import ctypes
import os
import pstats
import statistics
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..'))
import harness  # noqa: E402
import gdngen  # noqa: E402


def per_call_us(fn, batch=30, batches=20, sync=True):
    """Median over batches of the wall time per call of `batch` calls."""
    out = []
    for _ in range(batches):
        if sync:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(batch):
            fn()
        out.append((time.perf_counter() - t0) * 1e6 / batch)
    if sync:
        torch.cuda.synchronize()
    return statistics.median(out)


def row_figures(case):
    inp = harness.make_inputs(case, 1234, torch.device('cuda'), False, torch)
    fn, route = harness.make_gdngen_callable(gdngen, inp, False)
    _, callable_ms = harness.time_callable(fn, 20, 100, True, torch)
    host = per_call_us(fn)
    # gdn_prefill alone: the binding's own argument struct, made once
    q, k, v = inp['q'], inp['k'], inp['v']
    a, keep, T, N, Ho = gdngen._prepare(q, k, v, inp['alpha'], inp['beta'], inp['scale'],
                                        inp['h0'], inp['cu32'], False)
    o = torch.empty((T, Ho, 128), dtype=torch.bfloat16, device=q.device)
    fin = torch.empty((N, Ho, 128, 128), dtype=torch.float32, device=q.device) if inp['state'] else None
    a.o, a.final_state = o.data_ptr(), fin.data_ptr() if fin is not None else 0
    L = gdngen._get_lib()
    h = L.handle(q.device.index)
    need = ctypes.c_size_t(0)
    L.lib.gdn_workspace_size(h, ctypes.byref(a), ctypes.byref(need))
    ws = torch.empty(max(need.value, 16), dtype=torch.uint8, device=q.device)
    st = torch.cuda.current_stream().cuda_stream
    pa, wsp, wsn = ctypes.byref(a), ws.data_ptr(), need.value

    def prefill():
        if L.lib.gdn_prefill(h, pa, wsp, wsn, st) != 0:
            raise RuntimeError(L.lib.gdn_last_error(h).decode())
    prefill()
    pre = per_call_us(prefill)
    wsz = per_call_us(lambda: L.lib.gdn_workspace_size(h, pa, ctypes.byref(need)), sync=False)
    return route, callable_ms, host, pre, wsz, fn, inp


def pieces(inp):
    """The binding's steps, each alone: microseconds per call."""
    q, dev = inp['q'], inp['q'].device
    T, Ho = q.shape[0], inp['Ho']
    args = (q, inp['k'], inp['v'], inp['alpha'], inp['beta'], inp['scale'], inp['h0'],
            inp['cu32'], False)
    L = gdngen._get_lib()
    steps = [
        ('torch.compiler.is_compiling()', lambda: torch.compiler.is_compiling()),
        ('_prepare (_fast, then nothing more)', lambda: gdngen._prepare(*args)),
        ('_Args() and 17 fields set', lambda: _fill_args()),
        ('torch.empty o (device=)', lambda: torch.empty((T, Ho, 128), dtype=torch.bfloat16,
                                                        device=dev)),
        ('q.new_empty o', lambda: q.new_empty((T, Ho, 128))),
        ('torch.empty ws uint8', lambda: torch.empty(1 << 20, dtype=torch.uint8, device=dev)),
        ('current_stream(dev).cuda_stream', lambda: torch.cuda.current_stream(dev).cuda_stream),
        ('_cuda_getCurrentRawStream', lambda: torch._C._cuda_getCurrentRawStream(dev.index)),
        ('q.device.index', lambda: q.device.index),
        ('lib.handle(dev)', lambda: L.handle(0)),
        ('5 tensor checks (_ok)', lambda: _checks(inp)),
        ('_fast (checks, ctypes struct)', lambda: gdngen._fast(*args)),
        ('data_ptr() x 6', lambda: [t.data_ptr() for t in (q, q, q, q, q, q)]),
    ]
    for name, f in steps:
        print('  %-36s %7.2f us' % (name, per_call_us(f, batch=200, batches=15, sync=False)))


def _fill_args():
    a = gdngen._Args()
    for n in ('q', 'k', 'v', 'alpha', 'beta', 'cu_seqlens', 'initial_state', 'final_state', 'o'):
        setattr(a, n, 4096)
    a.T, a.N, a.Hq, a.Hk, a.Hv, a.head_dim = 1, 1, 8, 8, 8, 128
    a.scale, a.force_generic = 0.5, 0
    return a


def _checks(inp):
    dev = inp['q'].device
    for name in ('q', 'k', 'v', 'alpha', 'beta'):
        t = inp[name]
        gdngen._ok(t, t.dtype, t.shape, dev.index)


def main():
    argv = [x for x in sys.argv[1:] if x != '--profile']
    profile = '--profile' in sys.argv
    rows = harness.load_cases(os.path.join(HERE, '..', 'cases.json'))
    if argv:
        rows = [r for r in rows if argv[0] in r['name']]
    print('| row | route | callable us | host us/call | gdn_prefill us | gdn_workspace_size us |')
    print('|---|---|---|---|---|---|')
    last = None
    for case in rows:
        route, c, hst, pre, wsz, fn, inp = row_figures(case)
        print('| %s | %s | %.1f | %.1f | %.1f | %.1f |' % (case['name'], route, c * 1e3, hst, pre,
                                                           wsz))
        last = (case, fn, inp)
    if last is None:
        return
    print('\npieces (row %s):' % last[0]['name'])
    pieces(last[2])
    if profile:
        fn = last[1]
        pr = cProfile.Profile()
        pr.enable()
        for _ in range(300):
            fn()
        pr.disable()
        torch.cuda.synchronize()
        pstats.Stats(pr).sort_stats('tottime').print_stats(18)


if __name__ == '__main__':
    main()
