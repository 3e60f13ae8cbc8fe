#!/usr/bin/env python3
"""gdngen vs FLA benchmark harness (follows shared/bench/PROTOCOL.md).

Parent mode (default): for every row of cases.json and every repetition, start one
worker process (this file with --worker); each worker runs every implementation on
the same seeded inputs, times the callable (CUDA events around `iters` calls after
`warmup` calls; the first, compiling call timed separately) and then the device work
(one call captured in a CUDA graph, `iters` replays timed the same way). The row's
figure is the median over processes. Accuracy (rel-RMS of o and of the final state
against the fp64 token recurrence) is computed once per row, in the repetition-0
worker, after its timings.

Writes <out>/<YYYY-MM-DD>-<tag>.{json,csv,md,png,log}; prints the markdown last.

Other modes: --selftest (reporting path with fake records, no torch needed),
--report-only FILE.json (re-make csv/md/png from a json written earlier).
"""

import argparse
import csv
import datetime
import json
import math
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def repo_path(path):
    """A path as records keep it: relative to the repository, else its name."""
    if not path:
        return None
    p = Path(path).resolve()
    try:
        return str(p.relative_to(ROOT))
    except ValueError:
        return p.name
PEER = 'fla'
KNOWN_IMPLS = ('gdngen', 'gdngen-generic', 'fla')
DEFAULT_IMPLS = 'gdngen,gdngen-generic,fla'
CLOSE_BAND = 0.02          # a ratio within +-2 % of 1.0 -> more processes
EXIT_BACKEND = 3           # FLA would run (or ran) another backend than its Triton path
EXIT_NO_IMPL = 4           # no implementation could be imported in a worker

# FLA backend switches forced in every worker: the peer must be FLA's own Triton path.
FLA_ENV = {'FLA_FLASH_QLA': '0', 'FLA_TILELANG': '0', 'FLA_INTRACARD_CP': '0'}
# Triton keeps its autotuning results on disk, so the 2nd and 3rd process of
# a row skip the peer's tuning (only the excluded first call is affected).
WORKER_ENV = {'TRITON_CACHE_AUTOTUNING': '1'}


# --------------------------------------------------------------------------- args

def parse_args(argv=None):
    p = argparse.ArgumentParser(description='gdngen vs FLA benchmark (PROTOCOL.md)')
    p.add_argument('--cases', default=str(HERE / 'cases.json'), help='benchmark matrix (default: bench/cases.json)')
    p.add_argument('--rows', default='', help='comma-separated row names (or unique substrings); default: all')
    p.add_argument('--impls', default=DEFAULT_IMPLS, help=f'comma-separated subset of {",".join(KNOWN_IMPLS)}')
    p.add_argument('--quick', action='store_true', help='smoke test: 1 process per row, 3 warm-up + 10 timed calls')
    p.add_argument('--out', default=str(HERE / 'results'), help='output folder (default: bench/results)')
    p.add_argument('--tag', default=None, help='file name tag (default: full / quick)')
    p.add_argument('--reps', type=int, default=None, help='processes per row (default 3; quick 1)')
    p.add_argument('--reps-close', type=int, default=7, help='processes for a row whose ratio is within +-2%% of 1')
    p.add_argument('--warmup', type=int, default=None, help='warm-up calls (default 20; quick 3)')
    p.add_argument('--iters', type=int, default=None, help='timed calls / replays (default 100; quick 10)')
    p.add_argument('--seed', type=int, default=1234, help='base seed; row i uses seed+i')
    p.add_argument('--no-accuracy', action='store_true', help='skip the fp64 reference')
    p.add_argument('--single-cu', action='store_true',
                   help='also pass cu_seqlens for single-sequence rows (default: only packed rows)')
    p.add_argument('--budget-s', type=float, default=540.0,
                   help='start no new worker after this many seconds (0: no limit); the report says what was skipped')
    p.add_argument('--worker-timeout', type=float, default=300.0, help='seconds before a worker is killed')
    p.add_argument('--prewarm', action='store_true',
                   help='before the timed processes, compile the peer for every row in parallel processes '
                        '(Triton cache only; autotuning stays with the timed processes); the first-call '
                        'figures are then warm-cache ones')
    p.add_argument('--selftest', action='store_true', help='test the reporting path with fake records (no torch)')
    p.add_argument('--report-only', metavar='JSON', help='re-make csv/md/png from a results json')
    # worker (internal)
    p.add_argument('--worker', action='store_true', help=argparse.SUPPRESS)
    p.add_argument('--rep', type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument('--record', default=None, help=argparse.SUPPRESS)
    p.add_argument('--accuracy', action='store_true', help=argparse.SUPPRESS)
    p.add_argument('--prewarm-only', action='store_true', help=argparse.SUPPRESS)
    p.add_argument('--device', default='cuda', help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.reps is None:
        a.reps = 1 if a.quick else 3
    if a.warmup is None:
        a.warmup = 3 if a.quick else 20
    if a.iters is None:
        a.iters = 10 if a.quick else 100
    return a


def parse_impls(s):
    impls = [x.strip() for x in s.split(',') if x.strip()]
    bad = [x for x in impls if x not in KNOWN_IMPLS]
    if bad:
        raise SystemExit(f'harness: unknown implementation(s) {bad}; known: {list(KNOWN_IMPLS)}')
    if not impls:
        raise SystemExit('harness: --impls is empty')
    return list(dict.fromkeys(impls))


def load_cases(path):
    with open(path) as f:
        data = json.load(f)
    head_dim = int(data.get('head_dim', 128))
    scale = float(data.get('scale', head_dim ** -0.5))
    rows = []
    for i, c in enumerate(data['cases']):
        c = dict(c)
        c['index'] = i
        c.setdefault('head_dim', head_dim)
        c.setdefault('scale', scale)
        rows.append(c)
    return rows


def select_rows(rows, spec):
    if not spec.strip():
        return rows
    picked = []
    for want in [x.strip() for x in spec.split(',') if x.strip()]:
        exact = [r for r in rows if r['name'] == want]
        hits = exact or [r for r in rows if want in r['name']]
        if not hits:
            raise SystemExit(f'harness: --rows {want!r} matches no row; rows: {[r["name"] for r in rows]}')
        if len(hits) > 1:
            raise SystemExit(f'harness: --rows {want!r} matches several rows: {[r["name"] for r in hits]}')
        if hits[0] not in picked:
            picked.append(hits[0])
    return picked


def rotated(impls, r):
    n = len(impls)
    r %= n
    return impls[r:] + impls[:r]


# --------------------------------------------------------------------------- small helpers

def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def geomean(xs):
    xs = [x for x in xs if x is not None and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def ratio(a, b):
    return a / b if (a is not None and b is not None and b > 0) else None


def is_close_to_one(r, band=CLOSE_BAND):
    return r is not None and abs(r - 1.0) <= band


def nvidia_smi(fields):
    """First GPU's answer to nvidia-smi --query-gpu, as a dict (values as strings)."""
    exe = shutil.which('nvidia-smi')
    if not exe:
        return {'error': 'nvidia-smi not found'}
    try:
        cp = subprocess.run([exe, '--query-gpu=' + ','.join(fields), '--format=csv,noheader,nounits'],
                            capture_output=True, text=True, timeout=20)
    except Exception as e:  # noqa: BLE001
        return {'error': repr(e)}
    if cp.returncode != 0:
        return {'error': (cp.stdout + cp.stderr).strip()[-300:]}
    lines = [ln for ln in cp.stdout.splitlines() if ln.strip()]
    if not lines:
        return {'error': 'no output'}
    vals = [v.strip() for v in lines[0].split(',')]
    d = dict(zip(fields, vals))
    if len(lines) > 1:
        d['gpus'] = len(lines)
    return d


SMI_STATIC = ['name', 'driver_version', 'clocks.sm', 'clocks.max.sm', 'clocks.mem', 'temperature.gpu', 'pstate']
SMI_CLOCKS = ['clocks.sm', 'clocks.max.sm', 'clocks.mem', 'temperature.gpu', 'pstate']


def git_info():
    try:
        head = subprocess.run(['git', '-C', str(ROOT), 'rev-parse', 'HEAD'], capture_output=True, text=True,
                              timeout=10)
        if head.returncode != 0:
            return None
        dirty = subprocess.run(['git', '-C', str(ROOT), 'status', '--porcelain', '--untracked-files=no'],
                               capture_output=True, text=True, timeout=10)
        return {'commit': head.stdout.strip(), 'dirty': bool(dirty.stdout.strip())}
    except Exception:  # noqa: BLE001
        return None


def lib_info():
    """The libgdn.so the workers load (as the binding finds it) and its
    sha256: a git commit alone does not say which build ran."""
    import hashlib
    path = os.environ.get('GDNGEN_LIB') or str(ROOT / 'build' / 'libgdn.so')
    try:
        with open(path, 'rb') as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        mtime = datetime.datetime.fromtimestamp(os.path.getmtime(path), datetime.timezone.utc)
    except OSError:
        return None
    info = {'path': repo_path(path), 'sha256': digest, 'mtime_utc': mtime.isoformat(timespec='seconds')}
    try:  # the commit the Makefile recorded when it linked this library
        commit, state = Path(path).with_name('libgdn.commit').read_text().split()[:2]
        if state in ('clean', 'dirty'):
            info['commit'], info['commit_dirty'] = commit, state == 'dirty'
    except (OSError, ValueError):
        pass
    return info


def write_json_atomic(path, obj):
    path = Path(path)
    tmp = path.with_name(path.name + '.tmp')
    with open(tmp, 'w') as f:
        json.dump(obj, f, indent=1, default=str)
    os.replace(tmp, path)


# =========================================================================== worker

def worker_main(args):
    for k, v in FLA_ENV.items():
        os.environ[k] = v
    rows = select_rows(load_cases(args.cases), args.rows)
    if len(rows) != 1:
        raise SystemExit('worker: needs exactly one row')
    case = rows[0]
    order = parse_impls(args.impls)
    rec = {'row': case['name'], 'rep': args.rep, 'order': order, 'pid': os.getpid(), 'impls': {},
           'accuracy': None, 'env': {}, 'errors': [], 'fatal': None,
           'warmup': args.warmup, 'iters': args.iters, 'seed': args.seed + case['index']}
    t_start = time.perf_counter()

    def save():
        rec['worker_s'] = round(time.perf_counter() - t_start, 3)
        if args.record:
            write_json_atomic(args.record, rec)

    def log(msg):
        print(f'[worker {case["name"]} rep {args.rep}] {msg}', file=sys.stderr, flush=True)

    import torch
    dev = torch.device(args.device)
    on_cuda = dev.type == 'cuda'
    env = rec['env']
    env['python'] = platform.python_version()
    env['torch'] = torch.__version__
    env['torch_cuda'] = torch.version.cuda
    try:
        import triton
        env['triton'] = triton.__version__
    except Exception as e:  # noqa: BLE001
        env['triton'] = f'unavailable ({e!r})'
    if on_cuda:
        props = torch.cuda.get_device_properties(dev)
        env['gpu'] = props.name
        env['sm_count'] = props.multi_processor_count
        env['capability'] = f'{props.major}.{props.minor}'
        env['gpu_mem_gib'] = round(props.total_memory / 2**30, 1)

    # ---- implementations
    gd = None
    if any(i.startswith('gdngen') for i in order):
        try:
            try:
                import gdngen as gd
            except ImportError:
                sys.path.append(str(ROOT / 'runtime' / 'python'))
                import gdngen as gd
            env['gdngen'] = _safe(lambda: gd.version())
            env['gdngen_build'] = _safe(lambda: gd.build_id())
            env['gdngen_operands'] = _safe(lambda: gd.value_operands())
            env['gdngen_file'] = repo_path(getattr(gd, '__file__', None))
        except Exception as e:  # noqa: BLE001
            rec['gdngen_import_error'] = f'{type(e).__name__}: {e}'
            log(f'gdngen import failed ({rec["gdngen_import_error"]}); running without gdngen')
            order = [i for i in order if not i.startswith('gdngen')]
    fla_chunk, fla_info = None, None
    if PEER in order:
        try:
            fla_chunk, fla_info = import_fla()
            rec['fla'] = fla_info
            env['fla'] = fla_info.get('version')
        except BackendError as e:
            rec['fla'] = e.info
            rec['fatal'] = f'FLA would run another backend: {e}'
            save()
            log('FATAL: ' + rec['fatal'])
            sys.exit(EXIT_BACKEND)
        except Exception as e:  # noqa: BLE001
            rec['fla_import_error'] = f'{type(e).__name__}: {e}'
            log(f'FLA import failed ({rec["fla_import_error"]}); running without FLA')
            order = [i for i in order if i != PEER]
    rec['order'] = order
    if not order:
        rec['fatal'] = 'no implementation could be imported'
        save()
        log('FATAL: ' + rec['fatal'])
        sys.exit(EXIT_NO_IMPL)

    torch.set_grad_enabled(False)
    inp = make_inputs(case, rec['seed'], dev, args.single_cu, torch)
    env['shape'] = {'T': inp['T'], 'N': inp['N'], 'Hq': inp['Hq'], 'Hk': inp['Hk'], 'Hv': inp['Hv'],
                    'Ho': inp['Ho'], 'state': inp['state'], 'cu_seqlens': inp['cu32'] is not None}

    fns = {}
    for name in order:
        r = rec['impls'][name] = {'first_call_ms': None, 'callable_ms': None, 'device_ms': None,
                                  'graph_defect': None, 'graph_check': None, 'error': None}
        try:
            if name == PEER:
                fns[name], r['call'] = make_fla_callable(fla_chunk, fla_info, inp, torch)
            else:
                fns[name], r['route'] = make_gdngen_callable(gd, inp, name == 'gdngen-generic')
        except Exception as e:  # noqa: BLE001
            r['error'] = f'setup: {type(e).__name__}: {e}'
            log(f'{name}: {r["error"]}')
    save()

    if args.prewarm_only:  # one call each: the compiles land in Triton's cache, nothing is timed
        for name in order:
            if name in fns:
                try:
                    fns[name]()
                    _try_sync(torch, on_cuda)
                except Exception as e:  # noqa: BLE001
                    log(f'{name}: prewarm call: {type(e).__name__}: {e}')
        log('prewarm done in %.1f s' % (time.perf_counter() - t_start))
        return 0

    # ---- phase 1: callable figure, in this process's order
    for name in order:
        if name not in fns:
            continue
        r = rec['impls'][name]
        try:
            r['first_call_ms'], r['callable_ms'] = time_callable(fns[name], args.warmup, args.iters, on_cuda, torch)
        except Exception as e:  # noqa: BLE001
            r['error'] = f'call: {type(e).__name__}: {str(e)[:2000]}'
            log(f'{name}: {r["error"]}')
            fns.pop(name)
            _try_sync(torch, on_cuda)
        save()

    # ---- phase 2: device figure (CUDA graph of one call)
    for name in order:
        if name not in fns:
            continue
        r = rec['impls'][name]
        if not on_cuda:
            r['graph_defect'] = 'no CUDA device'
            continue
        try:
            r['device_ms'], r['graph_check'], bad = time_graph(fns[name], args.warmup, args.iters, torch)
            if bad:
                r['graph_defect'] = f'graph replay check failed: {r["graph_check"]}'
        except Exception as e:  # noqa: BLE001
            r['graph_defect'] = f'capture/replay failed: {type(e).__name__}: {str(e)[:1000]}'
            log(f'{name}: {r["graph_defect"]}')
            _try_sync(torch, on_cuda)
        save()
    rec['clocks_after_timing'] = nvidia_smi(SMI_CLOCKS) if on_cuda else None

    # ---- FLA backend actually used
    if fla_info is not None:
        ran = [m for m in fla_info.pop('_log').msgs if '->' in m and 'rejected' not in m]
        fla_info['backends_dispatched'] = ran
        fla_info['backend'] = ('FLA Triton (no backend dispatched)' if not ran else 'OTHER: ' + '; '.join(ran))
        if ran:
            rec['fatal'] = 'FLA dispatched to another backend: ' + '; '.join(ran)
            save()
            log('FATAL: ' + rec['fatal'])
            sys.exit(EXIT_BACKEND)

    # ---- accuracy (once per row)
    if args.accuracy:
        acc = rec['accuracy'] = {}
        try:
            t0 = time.perf_counter()
            ref_o, ref_s = reference(inp, torch)
            if on_cuda:
                torch.cuda.synchronize()
            rec['reference_s'] = round(time.perf_counter() - t0, 2)
            for name in order:
                if name not in fns:
                    continue
                try:
                    o, st = fns[name]()
                    acc[name] = {'o_err': rel_err(o, ref_o, torch),
                                 'state_err': rel_err(st, ref_s, torch) if ref_s is not None else None}
                    if ref_s is not None and st is None:
                        acc[name]['state_err'] = 'no final state returned'
                except Exception as e:  # noqa: BLE001
                    acc[name] = {'error': f'{type(e).__name__}: {e}'}
        except Exception as e:  # noqa: BLE001
            rec['errors'].append(f'reference: {type(e).__name__}: {e}')
            log(rec['errors'][-1])
    save()
    log('done in %.1f s' % (time.perf_counter() - t_start))
    return 0


def _safe(f):
    try:
        return f()
    except Exception as e:  # noqa: BLE001
        return f'error: {e!r}'


def _try_sync(torch, on_cuda):
    if on_cuda:
        try:
            torch.cuda.synchronize()
        except Exception:  # noqa: BLE001
            pass


class BackendError(RuntimeError):
    def __init__(self, msg, info):
        super().__init__(msg)
        self.info = info


class _LogCollect:
    """Collects the messages of FLA's backend logger ('[FLA Backend] op.fn -> backend')."""

    def __init__(self):
        import logging

        class H(logging.Handler):
            def emit(h, record):  # noqa: N805
                try:
                    self.msgs.append(record.getMessage())
                except Exception:  # noqa: BLE001
                    pass
        self.msgs = []
        lg = logging.getLogger('fla.backends')
        lg.setLevel(logging.INFO)
        lg.addHandler(H())


def import_fla():
    """Import FLA's chunk_gated_delta_rule; check that no other backend would take the call."""
    import importlib
    import importlib.metadata
    import importlib.util
    import inspect
    info = {'env': {k: os.environ.get(k) for k in
                    ('FLA_FLASH_QLA', 'FLA_TILELANG', 'FLA_INTRACARD_CP', 'FLA_DISABLE_BACKEND_DISPATCH')}}
    info['_log'] = _LogCollect()
    try:
        info['flash_qla_importable'] = importlib.util.find_spec('flash_qla') is not None
    except Exception:  # noqa: BLE001
        info['flash_qla_importable'] = False
    try:
        from fla.ops.gated_delta_rule import chunk_gated_delta_rule as chunk
        info['import'] = 'fla'
    except ModuleNotFoundError as e:
        if e.name in ('fla', 'fla.ops', 'fla.ops.gated_delta_rule'):
            raise
        chunk = _import_fla_ops_only(info, e)
    except Exception as e:  # noqa: BLE001 - e.g. fla.models failing against this transformers
        chunk = _import_fla_ops_only(info, e)
    ver = None
    for dist in ('fla-core', 'flash-linear-attention'):
        try:
            ver = f'{dist} {importlib.metadata.version(dist)}'
            break
        except Exception:  # noqa: BLE001
            pass
    if ver is None:
        ver = 'fla ' + str(getattr(sys.modules.get('fla'), '__version__', 'unknown'))
    info['version'] = ver
    # Where the package came from, without the machine's folders.
    mod = getattr(sys.modules.get('fla'), '__file__', None) or ''
    info['module_file'] = os.path.join(*mod.split(os.sep)[-2:]) if mod else None
    try:
        params = inspect.signature(inspect.unwrap(chunk)).parameters
        info['has_state_v_first'] = 'state_v_first' in params
        info['has_cu_seqlens_cpu'] = 'cu_seqlens_cpu' in params
    except (TypeError, ValueError) as e:
        info['signature_error'] = repr(e)   # fla-core >= 0.6 has both
        info['has_state_v_first'] = info['has_cu_seqlens_cpu'] = True

    # which backends would be considered before FLA's own Triton path
    active = []
    try:
        fb = importlib.import_module('fla.backends')
        info['dispatch_disabled'] = bool(getattr(fb, '_DISPATCH_DISABLED', False))
        regs = getattr(fb, '_operation_registries', {})
        for op in ('gated_delta_rule', 'common'):
            try:
                importlib.import_module(f'fla.ops.{op}.backends')
            except Exception as e:  # noqa: BLE001
                info.setdefault('registry_errors', []).append(f'{op}: {e!r}')
            reg = regs.get(op)
            if reg is None:
                continue
            for b in reg._get_sorted_backends():
                try:
                    if b.is_available() and b.is_enabled():
                        active.append(f'{op}:{b.backend_type}')
                except Exception as e:  # noqa: BLE001
                    info.setdefault('registry_errors', []).append(f'{op}:{b.backend_type}: {e!r}')
        if info['dispatch_disabled']:
            active = []
    except Exception as e:  # noqa: BLE001
        info['registry_errors'] = [f'backend registry not readable: {e!r}']
    if (info['flash_qla_importable'] and os.environ.get('FLA_FLASH_QLA', '1') != '0'
            and not any('flash_qla' in a for a in active)):
        active.append('gated_delta_rule:flash_qla (FLA_FLASH_QLA is not 0)')
    info['active_backends'] = active
    if active:
        raise BackendError('enabled and available: ' + ', '.join(active), {k: v for k, v in info.items()
                                                                           if k != '_log'})
    return chunk, info


def _import_fla_ops_only(info, err):
    """`import fla` runs fla/__init__, which imports fla.layers/fla.models (transformers); if that
    fails, load fla.ops alone under a bare package module."""
    import importlib.util
    import types
    info['import'] = f'fla.ops only (import fla failed: {type(err).__name__}: {str(err)[:300]})'
    for m in [m for m in sys.modules if m == 'fla' or m.startswith('fla.')]:
        del sys.modules[m]
    spec = importlib.util.find_spec('fla')
    if spec is None or not spec.submodule_search_locations:
        raise err
    pkg = types.ModuleType('fla')
    pkg.__path__ = list(spec.submodule_search_locations)
    pkg.__spec__ = spec
    pkg.__file__ = spec.origin
    sys.modules['fla'] = pkg
    from fla.ops.gated_delta_rule import chunk_gated_delta_rule as chunk
    return chunk


def make_inputs(case, seed, dev, single_cu, torch):
    seqlens = [int(x) for x in case['seqlens']]
    T, N = sum(seqlens), len(seqlens)
    Hq = int(case.get('hq', case['h']))
    Hk = int(case.get('hk', case['h']))
    Hv = int(case['hv'])
    Ho = max(Hq, Hv)
    D = int(case['head_dim'])
    g = torch.Generator(device=dev)
    g.manual_seed(seed)
    f32, bf16 = torch.float32, torch.bfloat16
    q = torch.randn(T, Hq, D, generator=g, device=dev, dtype=f32).to(bf16)
    k = torch.nn.functional.normalize(torch.randn(T, Hk, D, generator=g, device=dev, dtype=f32), p=2, dim=-1)
    k = k.to(bf16)
    v = torch.randn(T, Hv, D, generator=g, device=dev, dtype=f32).to(bf16)
    alpha = 0.8 + 0.2 * torch.rand(T, Ho, generator=g, device=dev, dtype=f32)
    beta = torch.sigmoid(torch.randn(T, Ho, generator=g, device=dev, dtype=f32))
    state = bool(case['state'])
    h0 = 0.1 * torch.randn(N, Ho, D, D, generator=g, device=dev, dtype=f32) if state else None
    offs = [0]
    for s in seqlens:
        offs.append(offs[-1] + s)
    packed = N > 1 or single_cu
    return {
        'T': T, 'N': N, 'Hq': Hq, 'Hk': Hk, 'Hv': Hv, 'Ho': Ho, 'D': D, 'state': state,
        'scale': float(case['scale']), 'offsets': offs,
        'q': q, 'k': k, 'v': v, 'alpha': alpha, 'beta': beta, 'h0': h0,
        # FLA takes a log-space gate: computed once, outside the timed region
        'g_log': torch.log(alpha),
        'cu32': torch.tensor(offs, dtype=torch.int32, device=dev) if packed else None,
        'cu64': torch.tensor(offs, dtype=torch.int64, device=dev) if packed else None,
        'cu_cpu': torch.tensor(offs, dtype=torch.int64) if packed else None,
    }


def make_gdngen_callable(gd, inp, force_generic):
    kw = dict(alpha=inp['alpha'], beta=inp['beta'], scale=inp['scale'], initial_state=inp['h0'],
              output_final_state=inp['state'], cu_seqlens=inp['cu32'], force_generic=force_generic)
    q, k, v = inp['q'], inp['k'], inp['v']
    f = gd.chunk_gated_delta_rule

    def fn():
        return f(q, k, v, **kw)
    try:
        route = gd.query_route(q, k, v, **kw)
    except Exception as e:  # noqa: BLE001
        route = f'query_route failed: {type(e).__name__}: {e}'
    return fn, route


def make_fla_callable(chunk, info, inp, torch):
    Hq, Hk, Hv = inp['Hq'], inp['Hk'], inp['Hv']
    if Hq != Hk or Hv % Hq != 0:
        raise ValueError(f'FLA supports only Hq == Hk and Hv a multiple of Hq (got Hq={Hq} Hk={Hk} Hv={Hv})')
    q4, k4, v4 = inp['q'].unsqueeze(0), inp['k'].unsqueeze(0), inp['v'].unsqueeze(0)
    g4, b4 = inp['g_log'].unsqueeze(0), inp['beta'].unsqueeze(0)
    kw = dict(scale=inp['scale'], initial_state=inp['h0'], output_final_state=inp['state'])
    transpose = not info['has_state_v_first']
    if not transpose:
        kw['state_v_first'] = True
    desc = {'state_layout': 'state_v_first=True' if not transpose else
            'no state_v_first: state transposed [V,K]<->[K,V] inside the callable'}
    if inp['cu64'] is not None:
        kw['cu_seqlens'] = inp['cu64']
        if info['has_cu_seqlens_cpu']:
            kw['cu_seqlens_cpu'] = inp['cu_cpu']
        desc['cu_seqlens'] = 'int64 + cu_seqlens_cpu' if info['has_cu_seqlens_cpu'] else 'int64 (no cu_seqlens_cpu)'
    h0 = inp['h0']

    if not transpose:
        def fn():
            o, st = chunk(q4, k4, v4, g4, b4, **kw)
            return o.squeeze(0), st
    else:
        def fn():
            kw2 = dict(kw)
            if h0 is not None:
                kw2['initial_state'] = h0.transpose(-1, -2).contiguous()
            o, st = chunk(q4, k4, v4, g4, b4, **kw2)
            if st is not None:
                st = st.transpose(-1, -2).contiguous()
            return o.squeeze(0), st
    return fn, desc


def time_callable(fn, warmup, iters, on_cuda, torch):
    """First (compiling) call in wall ms; then mean ms per call over `iters` calls after `warmup`."""
    sync = torch.cuda.synchronize if on_cuda else (lambda: None)
    sync()
    t0 = time.perf_counter()
    fn()
    sync()
    first = (time.perf_counter() - t0) * 1e3
    for _ in range(warmup):
        fn()
    sync()
    if not on_cuda:
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        return first, (time.perf_counter() - t0) * 1e3 / iters
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn()
    end.record()
    end.synchronize()
    return first, start.elapsed_time(end) / iters


def _outs(res):
    o, st = res
    return [o] + ([st] if st is not None else [])


def time_graph(fn, warmup, iters, torch):
    """Capture one call in a CUDA graph; check a replay rewrites the outputs like an eager call;
    time `iters` replays after `warmup`. Returns (ms per replay, check text, check failed)."""
    eager = [t.clone() for t in _outs(fn())]
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static = fn()
    torch.cuda.synchronize()
    outs = _outs(static)
    for t in outs:
        t.fill_(float('nan'))
    graph.replay()
    torch.cuda.synchronize()
    bad = False
    if len(outs) != len(eager):
        check, bad = f'replay returned {len(outs)} tensors, eager {len(eager)}', True
    else:
        nans = sum(int(torch.isnan(t.float()).sum().item()) for t in outs)
        diff = max(float((a.float() - b.float()).abs().max().item()) for a, b in zip(outs, eager))
        rel = max(float(torch.linalg.vector_norm(a.double() - b.double()).item()) /
                  max(float(torch.linalg.vector_norm(b.double()).item()), 1e-30) for a, b in zip(outs, eager))
        if nans:
            check, bad = f'{nans} output elements not written by the replay', True
        elif diff == 0.0:
            check = 'replay identical to eager'
        elif rel <= 1e-2:   # tolerate run-to-run nondeterminism; flag a replay that computes something else
            check = f'replay close to eager (max|diff| {diff:.2e}, rel {rel:.1e})'
        else:
            check, bad = f'replay differs from eager (max|diff| {diff:.3e}, rel {rel:.2e})', True
    for _ in range(warmup):
        graph.replay()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        graph.replay()
    end.record()
    end.synchronize()
    ms = start.elapsed_time(end) / iters
    del graph, static, outs
    torch.cuda.synchronize()
    return ms, check, bad


def reference(inp, torch):
    """fp64 token recurrence from the bf16 inputs (vectorised over output heads, per sequence).
    Returns o [T, Ho, V] and the final state [N, Ho, V, K] (or None)."""
    T, Ho, D = inp['T'], inp['Ho'], inp['D']
    dev = inp['q'].device
    f64 = torch.float64
    heads = torch.arange(Ho, device=dev)
    qd = inp['q'].to(f64)[:, heads // (Ho // inp['Hq'])] * inp['scale']   # [T, Ho, K], scale folded in
    kd = inp['k'].to(f64)[:, heads // (Ho // inp['Hk'])]
    vd = inp['v'].to(f64)[:, heads // (Ho // inp['Hv'])]
    a = inp['alpha'].to(f64).view(T, Ho, 1, 1)
    b = inp['beta'].to(f64).view(T, Ho, 1)
    qc, kc, kr = qd.unsqueeze(-1), kd.unsqueeze(-1), kd.unsqueeze(-2)      # columns [Ho,K,1], rows [Ho,1,K]
    o = torch.empty(T, Ho, D, 1, dtype=f64, device=dev)
    finals = []
    offs = inp['offsets']
    for n in range(inp['N']):
        S = (inp['h0'][n].to(f64).clone() if inp['h0'] is not None
             else torch.zeros(Ho, D, D, dtype=f64, device=dev))            # [Ho, V, K]
        for t in range(offs[n], offs[n + 1]):
            S.mul_(a[t])                                                     # decay
            u = torch.bmm(S, kc[t])                                          # pred [Ho, V, 1]
            u = (vd[t].unsqueeze(-1) - u).mul_(b[t].unsqueeze(-1))           # beta * (v - pred)
            S.baddbmm_(u, kr[t])                                             # S += u k^T
            torch.bmm(S, qc[t], out=o[t])                                    # scale * S q
        finals.append(S)
    return o.squeeze(-1), (torch.stack(finals) if inp['state'] else None)


def rel_err(x, ref, torch):
    if x is None or ref is None:
        return None
    x = x.to(torch.float64).reshape(ref.shape)
    den = float(torch.linalg.vector_norm(ref).item())
    num = float(torch.linalg.vector_norm(x - ref).item())
    return num / den if den > 0 else float('inf')


# =========================================================================== parent

def worker_env(autotune_cache):
    env = dict(os.environ)
    env.update(FLA_ENV)
    env.update(WORKER_ENV)
    env['TRITON_CACHE_AUTOTUNING'] = '1' if autotune_cache else '0'
    env['PYTHONUNBUFFERED'] = '1'
    rt = str(ROOT / 'runtime' / 'python')
    env['PYTHONPATH'] = env['PYTHONPATH'] + os.pathsep + rt if env.get('PYTHONPATH') else rt
    return env


def prewarm(args, rows, logf):
    """The peer's first call for every row at once, in parallel processes, so
    that its Triton compiles are cached before the timed processes run (the
    first of which spent 16-36 s a row compiling). They keep no autotuning
    choice (TRITON_CACHE_AUTOTUNING=0): configurations tried on a GPU shared
    by six processes would be skewed, so the timed processes still tune, on
    an idle GPU, from compiled configurations. Returns a note; a failure
    only costs the time it took."""
    t0 = time.monotonic()
    procs = []
    for case in rows:
        cmd = [sys.executable, str(Path(__file__).resolve()), '--worker', '--prewarm-only',
               '--cases', str(args.cases), '--rows', case['name'], '--impls', PEER,
               '--seed', str(args.seed)]
        if args.single_cu:
            cmd.append('--single-cu')
        procs.append((case['name'], subprocess.Popen(
            cmd, env=worker_env(False), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            start_new_session=True, cwd=str(ROOT))))
    failed = []
    for name, proc in procs:
        try:
            out, _ = proc.communicate(timeout=max(1.0, args.worker_timeout - (time.monotonic() - t0)))
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except Exception:  # noqa: BLE001
                proc.kill()
            out, _ = proc.communicate()
        logf.write(f'===== prewarm {name} rc {proc.returncode}\n{out}\n')
        if proc.returncode != 0:
            failed.append(name)
    logf.flush()
    took = time.monotonic() - t0
    return (f'prewarm: {PEER} compiled for {len(rows)} row(s) in parallel in {took:.0f} s'
            + (f' (failed: {", ".join(failed)})' if failed else '')
            + '; its first-call figures are warm-cache ones')


def run_worker(args, case, rep, order, accuracy, logf):
    fd, rec_path = tempfile.mkstemp(prefix='gdnbench-', suffix='.json')
    os.close(fd)
    os.unlink(rec_path)
    cmd = [sys.executable, str(Path(__file__).resolve()), '--worker', '--cases', str(args.cases),
           '--rows', case['name'], '--impls', ','.join(order), '--rep', str(rep),
           '--warmup', str(args.warmup), '--iters', str(args.iters), '--seed', str(args.seed),
           '--record', rec_path]
    if accuracy:
        cmd.append('--accuracy')
    if args.single_cu:
        cmd.append('--single-cu')
    if args.device != 'cuda':
        cmd += ['--device', args.device]
    env = worker_env(True)
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True, cwd=str(ROOT))
    timed_out = False
    try:
        out, _ = proc.communicate(timeout=args.worker_timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except Exception:  # noqa: BLE001
            proc.kill()
        out, _ = proc.communicate()
    wall = time.monotonic() - t0
    logf.write(f'===== {case["name"]} rep {rep} order {",".join(order)} rc {proc.returncode} '
               f'{wall:.1f}s\n{out}\n')
    logf.flush()
    rec = None
    if os.path.exists(rec_path):
        try:
            with open(rec_path) as f:
                rec = json.load(f)
        except Exception:  # noqa: BLE001
            rec = None
        os.unlink(rec_path)
    if rec is None:
        rec = {'row': case['name'], 'rep': rep, 'order': order, 'impls': {}, 'accuracy': None, 'env': {},
               'errors': [], 'fatal': None}
    rec['returncode'] = proc.returncode
    rec['wall_s'] = round(wall, 2)
    if timed_out:
        rec['errors'].append(f'worker killed after {args.worker_timeout:.0f} s')
    if proc.returncode != 0:
        rec['output_tail'] = out[-3000:]
        if not rec.get('fatal') and proc.returncode not in (EXIT_BACKEND, EXIT_NO_IMPL):
            rec['errors'].append(f'worker exit code {proc.returncode}')
    return rec


def fmt_ms(x):
    return '–' if x is None else (f'{x:.4f}' if x < 0.1 else f'{x:.3f}')


def fmt_ratio(x):
    return '–' if x is None else f'{x:.3f}'


def fmt_err(x):
    if x is None:
        return '–'
    if isinstance(x, str):
        return x
    return f'{x:.2e}'


def summarize(records, rows, impls):
    """Per row and implementation: medians over processes, ratios vs FLA, accuracy, defects."""
    summary = {'rows': [], 'geomean': {}, 'impls': impls}
    for case in rows:
        name = case['name']
        recs = [r for r in records if r.get('row') == name]
        entry = {'row': name, 'impls': {}}
        acc = next((r['accuracy'] for r in recs if r.get('accuracy')), None) or {}
        for impl in impls:
            callable_ms, device_ms, first, routes, defects, errors = [], [], [], [], [], []
            for r in recs:
                d = (r.get('impls') or {}).get(impl)
                if not d:
                    continue
                if d.get('callable_ms') is not None:
                    callable_ms.append(d['callable_ms'])
                if d.get('device_ms') is not None and not d.get('graph_defect'):
                    device_ms.append(d['device_ms'])
                if d.get('first_call_ms') is not None:
                    first.append(d['first_call_ms'])
                if d.get('route') and d['route'] not in routes:
                    routes.append(d['route'])
                if d.get('graph_defect') and d['graph_defect'] not in defects:
                    defects.append(d['graph_defect'])
                if d.get('error') and d['error'] not in errors:
                    errors.append(d['error'])
            a = acc.get(impl) or {}
            if a.get('error'):
                errors.append('accuracy: ' + a['error'])
            entry['impls'][impl] = {
                'n_proc': len(callable_ms), 'n_device': len(device_ms),
                'callable_ms': median(callable_ms), 'device_ms': median(device_ms),
                'callable_all': callable_ms, 'device_all': device_ms,
                'first_call_ms': first, 'route': ', '.join(routes) if routes else None,
                'o_err': a.get('o_err'), 'state_err': a.get('state_err'),
                'defects': defects, 'errors': errors,
            }
        peer = entry['impls'].get(PEER)
        for impl, d in entry['impls'].items():
            if impl == PEER or peer is None:
                d['ratio_callable'] = d['ratio_device'] = None
            else:
                d['ratio_callable'] = ratio(d['callable_ms'], peer['callable_ms'])
                d['ratio_device'] = ratio(d['device_ms'], peer['device_ms'])
        summary['rows'].append(entry)
    for impl in impls:
        if impl == PEER:
            continue
        rc = [e['impls'][impl]['ratio_callable'] for e in summary['rows'] if impl in e['impls']]
        rd = [e['impls'][impl]['ratio_device'] for e in summary['rows'] if impl in e['impls']]
        summary['geomean'][impl] = {
            'callable': geomean(rc), 'device': geomean(rd),
            'rows_callable': sum(x is not None for x in rc), 'rows_device': sum(x is not None for x in rd),
            'rows': len(summary['rows']),
        }
    return summary


def row_needs_more(summary_row):
    """True if the gdngen/FLA ratio (callable or device) is within +-2 % of 1 (gdngen-generic counts
    only when plain gdngen is not run)."""
    impls = summary_row['impls']
    judged = ['gdngen'] if 'gdngen' in impls else [i for i in impls if i != PEER]
    for impl in judged:
        d = impls[impl]
        if is_close_to_one(d.get('ratio_callable')) or is_close_to_one(d.get('ratio_device')):
            return True
    return False


def collect_meta(records, host):
    meta = dict(host)
    env = next((r['env'] for r in records if r.get('env', {}).get('torch')), {})
    meta['worker_env'] = env
    fla = next((r['fla'] for r in records if r.get('fla')), None)
    meta['fla'] = fla
    meta['gdngen_import_error'] = next((r['gdngen_import_error'] for r in records
                                        if r.get('gdngen_import_error')), None)
    meta['fla_import_error'] = next((r['fla_import_error'] for r in records if r.get('fla_import_error')), None)
    clocks = [r.get('clocks_after_timing') or {} for r in records]
    sm = []
    for c in clocks:
        try:
            sm.append(int(float(c.get('clocks.sm'))))
        except (TypeError, ValueError):
            pass
    meta['sm_clock_seen_mhz'] = {'min': min(sm), 'max': max(sm), 'n': len(sm)} if sm else None
    meta['sm_clock_max_mhz'] = next((c.get('clocks.max.sm') for c in clocks if c.get('clocks.max.sm')),
                                    (host.get('smi_start') or {}).get('clocks.max.sm'))
    return meta


def render_markdown(result):
    meta, summary = result['meta'], result['summary']
    env = meta.get('worker_env') or {}
    smi = meta.get('smi_start') or {}
    fla = meta.get('fla') or {}
    L = []
    L.append(f'# gdngen vs FLA: {meta.get("date", "?")} ({meta.get("tag", "")})')
    L.append('')
    gpu = env.get('gpu') or smi.get('name') or '?'
    L.append(f'- GPU: {gpu}, driver {smi.get("driver_version", "?")}, SM clock seen after timing '
             + (f'{meta["sm_clock_seen_mhz"]["min"]}–{meta["sm_clock_seen_mhz"]["max"]} MHz'
                if meta.get('sm_clock_seen_mhz') else '?')
             + f' (max {meta.get("sm_clock_max_mhz", "?")} MHz; at start {smi.get("clocks.sm", "?")} MHz)')
    L.append(f'- torch {env.get("torch", "?")} (CUDA {env.get("torch_cuda", "?")}), triton {env.get("triton", "?")}, '
             f'python {env.get("python", "?")}')
    if fla:
        L.append(f'- peer: {fla.get("version", "?")} ({fla.get("import", "?")}), backend: '
                 f'{fla.get("backend", "?")}; flash_qla importable: {fla.get("flash_qla_importable")}, '
                 f'FLA_FLASH_QLA={(fla.get("env") or {}).get("FLA_FLASH_QLA")}')
    elif meta.get('fla_import_error'):
        L.append(f'- peer: FLA NOT AVAILABLE ({meta["fla_import_error"]})')
    if meta.get('gdngen_import_error'):
        L.append(f'- gdngen: IMPORT FAILED ({meta["gdngen_import_error"]}); FLA ran alone')
    else:
        L.append(f'- gdngen {env.get("gdngen", "?")}'
                 + (f' ({env["gdngen_build"]})' if env.get('gdngen_build') else '')
                 + (f', value operands {env["gdngen_operands"]}' if env.get('gdngen_operands') else ''))
    a = meta.get('args') or {}
    L.append(f'- protocol: {a.get("reps")} process(es) per row (up to {a.get("reps_close")} where a ratio was '
             f'within ±2 % of 1), implementation order rotated; {a.get("warmup")} warm-up + {a.get("iters")} timed '
             f'calls (callable) and replays of a one-call CUDA graph (device); figure = median over processes'
             + ('; QUICK smoke test' if a.get('quick') else ''))
    if meta.get('git'):
        L.append(f'- checkout that ran the harness: {meta["git"]["commit"][:12]}'
                 f'{" (dirty)" if meta["git"]["dirty"] else ""}')
    if meta.get('libgdn'):
        lg = meta['libgdn']
        built = (f', linked at commit {lg["commit"][:12]}{" with uncommitted changes" if lg["commit_dirty"] else ""}'
                 if lg.get('commit') else '')
        L.append(f'- libgdn: {lg["path"]}, sha256 {lg["sha256"][:16]}, built {lg["mtime_utc"]}{built}')
    L.append('- ratio = impl / FLA (below 1: faster than FLA). err = ‖x − ref‖₂ / ‖ref‖₂ against the fp64 '
             'token recurrence (o, final state).')
    L.append('')
    L.append('| row | impl | route | callable ms | device ms | callable ×FLA | device ×FLA | o err | state err '
             '| first call ms | procs |')
    L.append('|---|---|---|---|---|---|---|---|---|---|---|')
    for e in summary['rows']:
        for impl, d in e['impls'].items():
            first = d.get('first_call_ms') or []
            first_s = (f'{first[0]:.0f}' + (f' (then ≤{max(first[1:]):.0f})' if len(first) > 1 else '')
                       if first else '–')
            dev = fmt_ms(d['device_ms']) if not d['defects'] else (fmt_ms(d['device_ms']) + ' ⚠')
            L.append(f'| {e["row"]} | {impl} | {d.get("route") or "–"} | {fmt_ms(d["callable_ms"])} | {dev} | '
                     f'{fmt_ratio(d.get("ratio_callable"))} | {fmt_ratio(d.get("ratio_device"))} | '
                     f'{fmt_err(d.get("o_err"))} | {fmt_err(d.get("state_err"))} | {first_s} | {d["n_proc"]} |')
    L.append('')
    if summary['geomean']:
        L.append('**Geometric mean of the ratios over the rows**')
        L.append('')
        L.append('| impl | callable ×FLA | device ×FLA | rows (callable / device) |')
        L.append('|---|---|---|---|')
        for impl, g in summary['geomean'].items():
            L.append(f'| {impl} | {fmt_ratio(g["callable"])} | {fmt_ratio(g["device"])} | '
                     f'{g["rows_callable"]}/{g["rows"]} / {g["rows_device"]}/{g["rows"]} |')
        L.append('')
    problems = []
    for e in summary['rows']:
        for impl, d in e['impls'].items():
            for x in d['defects']:
                problems.append(f'- DEFECT {e["row"]} / {impl}: {x}')
            for x in d['errors']:
                problems.append(f'- ERROR {e["row"]} / {impl}: {x}')
    for r in result.get('records', []):
        if r.get('fatal'):
            problems.append(f'- FATAL {r.get("row")} rep {r.get("rep")}: {r["fatal"]}')
        for x in r.get('errors') or []:
            problems.append(f'- worker {r.get("row")} rep {r.get("rep")}: {x}')
    for x in result.get('notes', []):
        problems.append(f'- NOTE: {x}')
    if problems:
        L.append('**Defects, errors and notes**')
        L.append('')
        L.extend(dict.fromkeys(problems))
        L.append('')
    return '\n'.join(L)


CSV_FIELDS = ['date', 'tag', 'row', 'impl', 'route', 'n_proc', 'callable_ms', 'device_ms', 'ratio_callable',
              'ratio_device', 'o_err', 'state_err', 'first_call_ms', 'defects', 'errors']


def write_csv(result, path):
    meta = result['meta']
    with open(path, 'w', newline='') as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS)
        w.writeheader()
        for e in result['summary']['rows']:
            for impl, d in e['impls'].items():
                w.writerow({
                    'date': meta.get('date'), 'tag': meta.get('tag'), 'row': e['row'], 'impl': impl,
                    'route': d.get('route') or '', 'n_proc': d['n_proc'],
                    'callable_ms': _num(d['callable_ms']), 'device_ms': _num(d['device_ms']),
                    'ratio_callable': _num(d.get('ratio_callable')), 'ratio_device': _num(d.get('ratio_device')),
                    'o_err': _num(d.get('o_err')), 'state_err': _num(d.get('state_err')),
                    'first_call_ms': _num(d['first_call_ms'][0] if d['first_call_ms'] else None),
                    'defects': ' | '.join(d['defects']), 'errors': ' | '.join(d['errors']),
                })


def _num(x):
    if x is None:
        return ''
    if isinstance(x, str):
        return x
    return f'{x:.6g}'


def write_chart(result, path):
    """Bar chart of the ratios vs FLA (callable and device); absolute ms when there is no peer."""
    try:
        import matplotlib
        matplotlib.use('Agg')
        import matplotlib.pyplot as plt
        from matplotlib.ticker import ScalarFormatter
    except Exception as e:  # noqa: BLE001
        return f'chart skipped: matplotlib unavailable ({e!r})'
    summary = result['summary']
    rows = [e['row'] for e in summary['rows']]
    impls = [i for i in summary['impls'] if i != PEER]
    has_ratio = any(e['impls'].get(i, {}).get('ratio_callable') is not None or
                    e['impls'].get(i, {}).get('ratio_device') is not None
                    for e in summary['rows'] for i in impls)
    if has_ratio:
        series, keys, ylabel = impls, ('ratio_callable', 'ratio_device'), 'impl / FLA (lower is faster)'
    else:
        series, keys, ylabel = list(summary['impls']), ('callable_ms', 'device_ms'), 'ms per call'
    fig, axes = plt.subplots(1, 2, figsize=(max(10, 1.9 * len(rows) + 4), 5.5), sharey=has_ratio)
    width = 0.8 / max(1, len(series))
    for ax, key, title in zip(axes, keys, ('callable (host + device)', 'device (CUDA graph replay)')):
        for j, impl in enumerate(series):
            xs, ys = [], []
            for i, e in enumerate(summary['rows']):
                v = e['impls'].get(impl, {}).get(key)
                if v is not None:
                    xs.append(i - 0.4 + width * (j + 0.5))
                    ys.append(v)
            bars = ax.bar(xs, ys, width=width, label=impl)
            for b, y in zip(bars, ys):
                ax.annotate(f'{y:.2f}' if y >= 0.1 else f'{y:.3f}', (b.get_x() + b.get_width() / 2, y),
                            ha='center', va='bottom', fontsize=7)
        if has_ratio:
            ax.axhline(1.0, color='k', lw=0.8, ls='--')
            ax.set_yscale('log')
            ax.yaxis.set_major_formatter(ScalarFormatter())
            ax.yaxis.set_minor_formatter(ScalarFormatter())
            ax.tick_params(axis='y', which='minor', labelsize=7)
            geo = summary['geomean']
            ax.set_title(title + '\ngeo-mean: ' + ', '.join(
                f'{i} {geo[i]["callable" if key == "ratio_callable" else "device"]:.3f}'
                for i in impls if geo.get(i) and geo[i]["callable" if key == "ratio_callable" else "device"]))
        else:
            ax.set_title(title)
        ax.set_xticks(range(len(rows)))
        ax.set_xticklabels(rows, rotation=30, ha='right', fontsize=8)
        ax.set_ylabel(ylabel)
        ax.legend(fontsize=8)
        ax.grid(axis='y', alpha=0.3, which='both')
    meta = result['meta']
    fig.suptitle(f'gdngen vs FLA, {meta.get("date")} {meta.get("tag")}, '
                 f'{(meta.get("worker_env") or {}).get("gpu") or (meta.get("smi_start") or {}).get("name", "")}',
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return None


def write_reports(result, stem):
    """stem: path without suffix. Writes .json .csv .md .png; returns the markdown."""
    write_json_atomic(str(stem) + '.json', result)
    write_csv(result, str(stem) + '.csv')
    md = render_markdown(result)
    note = write_chart(result, str(stem) + '.png')
    if note:
        md += f'\n\n_{note}_\n'
    with open(str(stem) + '.md', 'w') as f:
        f.write(md + '\n')
    return md


def out_stem(out_dir, date, tag):
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    base = f'{date}-{tag}'
    stem, i = out_dir / base, 2
    while any((stem.with_name(stem.name + s)).exists() for s in ('.json', '.md', '.csv', '.png')):
        stem = out_dir / f'{base}-{i}'
        i += 1
    return stem


def host_meta(args, impls, rows):
    now = datetime.datetime.now(datetime.timezone.utc)
    return {
        'date': now.strftime('%Y-%m-%d'), 'started_utc': now.isoformat(timespec='seconds'),
        'tag': args.tag, 'python': platform.python_version(),
        'argv': [os.path.basename(a) if os.path.isabs(a) else a for a in sys.argv], 'cases_file': repo_path(args.cases), 'rows': [r['name'] for r in rows], 'impls': impls,
        'args': {k: getattr(args, k) for k in ('reps', 'reps_close', 'warmup', 'iters', 'seed', 'quick',
                                               'single_cu', 'budget_s', 'no_accuracy', 'prewarm')},
        'smi_start': nvidia_smi(SMI_STATIC), 'git': git_info(), 'libgdn': lib_info(),
        'env_forced': FLA_ENV,
    }


def parent_main(args):
    impls = parse_impls(args.impls)
    rows = select_rows(load_cases(args.cases), args.rows)
    if args.tag is None:
        args.tag = 'quick' if args.quick else 'full'
    meta = host_meta(args, impls, rows)
    stem = out_stem(args.out, meta['date'], args.tag)
    log_path = str(stem) + '.log'
    print(f'harness: {len(rows)} row(s), impls {impls}, {args.reps} process(es) per row, '
          f'warmup {args.warmup}, iters {args.iters}; results -> {stem}.*', flush=True)
    print(f'harness: GPU {meta["smi_start"]}', flush=True)
    t_start = time.monotonic()
    records, notes = [], []
    result = {'meta': meta, 'summary': None, 'records': records, 'notes': notes, 'complete': False}
    durations = {}
    said = set()

    def budget_left(row):
        if not args.budget_s:
            return True
        est = max(durations.get(row, [0.0]) or [0.0])
        return time.monotonic() - t_start + est <= args.budget_s

    def one(case, rep):
        order = rotated(impls, rep)
        rec = run_worker(args, case, rep, order, accuracy=(rep == 0 and not args.no_accuracy), logf=logf)
        records.append(rec)
        durations.setdefault(case['name'], []).append(rec.get('wall_s') or 0.0)
        parts = []
        for impl in order:
            d = (rec.get('impls') or {}).get(impl)
            if d:
                parts.append(f'{impl} {fmt_ms(d.get("callable_ms"))}/{fmt_ms(d.get("device_ms"))}'
                             + (' [graph defect]' if d.get('graph_defect') else '')
                             + (' [error]' if d.get('error') else ''))
        print(f'[{time.monotonic() - t_start:6.1f}s] {case["name"]} rep {rep} ({rec.get("wall_s")}s, '
              f'rc {rec.get("returncode")}): callable/device ms: ' + (', '.join(parts) or 'nothing'), flush=True)
        for key, what in (('gdngen_import_error', 'gdngen import failed: {} -- running FLA alone'),
                          ('fla_import_error', 'FLA import failed: {} -- running gdngen alone')):
            if rec.get(key) and key not in said:
                said.add(key)
                notes.append(what.format(rec[key]))
                print('harness: ' + notes[-1], flush=True)
        for e in rec.get('errors') or []:
            print(f'harness:   worker error: {e}', flush=True)
        if rec.get('returncode') not in (0, None) and rec.get('output_tail'):
            print('harness:   worker output tail:\n' + rec['output_tail'][-1500:], flush=True)
        write_json_atomic(str(stem) + '.json', result)
        return rec

    exit_code = 0
    with open(log_path, 'w') as logf:
        try:
            if args.prewarm and PEER in impls:
                notes.append(prewarm(args, rows, logf))
                print('harness: ' + notes[-1], flush=True)
            for rep in range(args.reps):           # rep-major: every row gets data early
                for case in rows:
                    if not budget_left(case['name']):
                        notes.append(f'budget ({args.budget_s:.0f} s) reached: {case["name"]} rep {rep} skipped')
                        print('harness: ' + notes[-1], flush=True)
                        continue
                    rec = one(case, rep)
                    if rec.get('returncode') == EXIT_BACKEND:
                        raise SystemExit(EXIT_BACKEND)
                    if rec.get('returncode') == EXIT_NO_IMPL:
                        raise SystemExit(EXIT_NO_IMPL)
            if not args.quick and args.reps_close > args.reps:
                summary = summarize(records, rows, impls)
                for e, case in zip(summary['rows'], rows):
                    if not row_needs_more(e):
                        continue
                    notes.append(f'{case["name"]}: a ratio within ±2 % of 1 -> {args.reps_close} processes')
                    print('harness: ' + notes[-1], flush=True)
                    for rep in range(args.reps, args.reps_close):
                        if not budget_left(case['name']):
                            notes.append(f'budget reached: {case["name"]} rep {rep} skipped')
                            print('harness: ' + notes[-1], flush=True)
                            continue
                        rec = one(case, rep)
                        if rec.get('returncode') == EXIT_BACKEND:
                            raise SystemExit(EXIT_BACKEND)
            result['complete'] = not any('skipped' in n for n in notes)
        except SystemExit as e:
            exit_code = e.code if isinstance(e.code, int) else 1
            fatal = next((r['fatal'] for r in records if r.get('fatal')), 'aborted')
            notes.append(f'ABORTED: {fatal}')
            print(f'\nharness: FATAL: {fatal}', file=sys.stderr, flush=True)
        except KeyboardInterrupt:
            exit_code = 130
            notes.append('interrupted')
    result['meta'] = collect_meta(records, meta)
    result['meta']['elapsed_s'] = round(time.monotonic() - t_start, 1)
    result['summary'] = summarize(records, rows, impls)
    md = write_reports(result, stem)
    print(f'\nharness: wrote {stem}.json .csv .md .png .log ({result["meta"]["elapsed_s"]} s)\n', flush=True)
    print(md, flush=True)
    if exit_code == 0 and not any(d['n_proc'] for e in result['summary']['rows'] for d in e['impls'].values()):
        print('harness: no implementation produced a timing', file=sys.stderr)
        exit_code = 2
    return exit_code


def report_only(path):
    with open(path) as f:
        result = json.load(f)
    rows = [{'name': n} for n in result['meta']['rows']]
    result['summary'] = summarize(result['records'], rows, result['meta']['impls'])
    if 'worker_env' not in result['meta']:
        result['meta'] = collect_meta(result['records'], result['meta'])
    stem = str(path)[:-5] if str(path).endswith('.json') else str(path)
    return write_reports(result, stem)


# =========================================================================== selftest

def fake_records(rows, impls, reps, close_row=None):
    """Deterministic fake worker records, as a worker would write them."""
    recs = []
    for rep in range(reps):
        for i, case in enumerate(rows):
            order = rotated(impls, rep)
            rec = {'row': case['name'], 'rep': rep, 'order': order, 'impls': {}, 'errors': [], 'fatal': None,
                   'returncode': 0, 'wall_s': 5.0,
                   'env': {'torch': '2.11.0+cu130', 'torch_cuda': '13.0', 'triton': '3.6.0', 'python': '3.12.3',
                           'gpu': 'NVIDIA H200', 'gdngen': '0.1.0-fake', 'fla': 'fla-core 0.6.0'},
                   'fla': {'version': 'fla-core 0.6.0', 'import': 'fla', 'backend': 'FLA Triton (no backend '
                           'dispatched)', 'flash_qla_importable': False, 'env': {'FLA_FLASH_QLA': '0'}},
                   'clocks_after_timing': {'clocks.sm': str(1980 - 15 * rep), 'clocks.max.sm': '1980'},
                   'accuracy': None}
            for impl in order:
                base = {'gdngen': 0.10, 'gdngen-generic': 0.16, 'fla': 0.50}[impl] * (1 + 0.2 * i)
                dev = {'gdngen': 0.03, 'gdngen-generic': 0.05, 'fla': 0.06}[impl] * (1 + 0.5 * i)
                if case['name'] == close_row and impl == 'gdngen':
                    dev = 0.06 * (1 + 0.5 * i) * 1.01
                d = {'first_call_ms': 900.0 if rep == 0 else 40.0, 'callable_ms': base * (1 + 0.01 * rep),
                     'device_ms': dev * (1 + 0.005 * rep), 'graph_defect': None,
                     'graph_check': 'replay identical to eager', 'error': None}
                if impl != 'fla':
                    d['route'] = 'generic' if impl == 'gdngen-generic' else ('register_replay' if i == 4 else
                                                                             'generic')
                if i == 1 and impl == 'gdngen-generic' and rep == 1:
                    d['device_ms'], d['graph_defect'] = None, 'capture/replay failed: RuntimeError: fake'
                rec['impls'][impl] = d
            if rep == 0:
                rec['accuracy'] = {impl: {'o_err': 1.9e-3 if impl != 'fla' else 3.6e-3,
                                          'state_err': (1.5e-3 if impl != 'fla' else 2.8e-3) if case['state']
                                          else None} for impl in order}
            recs.append(rec)
    return recs


def selftest(args):
    rows = load_cases(args.cases)
    impls = list(KNOWN_IMPLS)
    checks = []

    def check(cond, what):
        checks.append((bool(cond), what))
        print(('ok   ' if cond else 'FAIL ') + what)

    # argument handling
    a = parse_args(['--quick'])
    check(a.reps == 1 and a.warmup == 3 and a.iters == 10, 'quick defaults: 1 process, 3 warm-up, 10 iters')
    a = parse_args([])
    check(a.reps == 3 and a.warmup == 20 and a.iters == 100 and a.reps_close == 7, 'full defaults 3/20/100/7')
    check(parse_impls('fla,gdngen,fla') == ['fla', 'gdngen'], 'parse_impls dedups')
    try:
        parse_impls('cuLA')
        check(False, 'parse_impls rejects unknown')
    except SystemExit:
        check(True, 'parse_impls rejects unknown')
    check([r['name'] for r in select_rows(rows, 'packed-n10,t512')] ==
          ['packed-n10-t4096-h8-mha-state', 'single-t512-h8-mha-zero'], 'row filter by substring')
    try:
        select_rows(rows, 'single-t1024')
        check(False, 'ambiguous row filter rejected')
    except SystemExit:
        check(True, 'ambiguous row filter rejected')
    check(rotated(['a', 'b', 'c'], 1) == ['b', 'c', 'a'] and rotated(['a', 'b', 'c'], 3) == ['a', 'b', 'c'],
          'rotation')
    check(len(rows) == 6 and all(r['scale'] == 0.73 and r['head_dim'] == 128 for r in rows), 'cases: 6 rows')
    # statistics
    check(median([3, 1, 2, None]) == 2 and median([]) is None, 'median')
    check(abs(geomean([0.5, 2.0, 1.0]) - 1.0) < 1e-12 and geomean([None]) is None, 'geomean')
    check(is_close_to_one(1.019) and is_close_to_one(0.981) and not is_close_to_one(1.03), '±2 % band')

    close_row = rows[2]['name']
    recs = fake_records(rows, impls, 3, close_row=close_row)
    s = summarize(recs, rows, impls)
    e0 = s['rows'][0]['impls']
    check(abs(e0['gdngen']['callable_ms'] - 0.101) < 1e-12, 'row figure = median over processes')
    check(abs(e0['gdngen']['ratio_callable'] - 0.101 / 0.505) < 1e-12, 'callable ratio = impl median / FLA median')
    exp_geo = geomean([s['rows'][i]['impls']['gdngen']['ratio_device'] for i in range(6)])
    check(abs(s['geomean']['gdngen']['device'] - exp_geo) < 1e-12 and s['geomean']['gdngen']['rows_device'] == 6,
          'geo-mean over 6 rows')
    check(s['rows'][1]['impls']['gdngen-generic']['n_device'] == 2 and
          s['rows'][1]['impls']['gdngen-generic']['defects'], 'capture failure recorded as defect, not a figure')
    check([row_needs_more(e) for e in s['rows']] == [False, False, True, False, False, False],
          'only the row with a ratio within ±2 % gets 7 processes')
    check(s['rows'][0]['impls']['fla']['o_err'] == 3.6e-3 and s['rows'][0]['impls']['gdngen']['state_err'] is None,
          'accuracy carried from the rep-0 worker')

    with tempfile.TemporaryDirectory() as td:
        meta = {'date': '2026-01-02', 'tag': 'selftest', 'rows': [r['name'] for r in rows], 'impls': impls,
                'args': {'reps': 3, 'reps_close': 7, 'warmup': 20, 'iters': 100, 'quick': False},
                'smi_start': {'name': 'NVIDIA H200', 'driver_version': '580.159.04', 'clocks.sm': '345',
                              'clocks.max.sm': '1980'}, 'git': {'commit': 'f' * 40, 'dirty': True},
                'libgdn': {'path': 'build/libgdn.so', 'sha256': 'a' * 64, 'mtime_utc': '2026-01-02T00:00:00+00:00',
                           'commit': 'e' * 40, 'commit_dirty': False}}
        result = {'meta': collect_meta(recs, meta), 'summary': s, 'records': recs,
                  'notes': ['selftest note'], 'complete': True}
        stem = out_stem(td, '2026-01-02', 'selftest')
        md = write_reports(result, stem)
        check(stem.name == '2026-01-02-selftest', 'file stem <date>-<tag>')
        check(out_stem(td, '2026-01-02', 'selftest').name == '2026-01-02-selftest-2', 'no overwrite')
        with open(str(stem) + '.csv') as f:
            lines = list(csv.DictReader(f))
        check(len(lines) == 18 and lines[0]['row'] == rows[0]['name'], 'csv: one line per row and impl')
        check('built 2026-01-02T00:00:00+00:00, linked at commit eeeeeeeeeeee\n' in md and
              'checkout that ran the harness: ffffffffffff (dirty)' in md,
              'the build\'s commit beside the checkout\'s')
        check('| impl | callable ×FLA |' in md and 'DEFECT' in md and '1980' in md and 'fla-core 0.6.0' in md,
              'markdown has table, geo-mean, defects, stamps')
        png = Path(str(stem) + '.png')
        check(png.exists() and png.stat().st_size > 1000 or 'chart skipped' in md, 'png chart written')
        # report-only round trip
        md2 = report_only(str(stem) + '.json')
        check(md2.splitlines()[:12] == md.splitlines()[:12], 'report-only reproduces the report')
        # FLA-only chart (gdngen import failed)
        recs2 = [dict(r, impls={'fla': r['impls']['fla']}) for r in recs]
        s2 = summarize(recs2, rows, ['fla'])
        result2 = {'meta': dict(result['meta'], gdngen_import_error='ImportError: fake'), 'summary': s2,
                   'records': recs2, 'notes': [], 'complete': True}
        md3 = write_reports(result2, Path(td) / 'fla-only')
        check('IMPORT FAILED' in md3 and Path(td, 'fla-only.png').exists() or 'chart skipped' in md3,
              'FLA-only report and chart')
        if args.out and args.out != str(HERE / 'results'):
            Path(args.out).mkdir(parents=True, exist_ok=True)
            for suf in ('.json', '.csv', '.md', '.png'):
                if Path(str(stem) + suf).exists():
                    shutil.copy(str(stem) + suf, Path(args.out) / (stem.name + suf))
            print(f'selftest: copies in {args.out}')
        print()
        print(md)
    failed = [w for ok, w in checks if not ok]
    print(f'\n{len(checks) - len(failed)} passed, {len(failed)} failed')
    return 1 if failed else 0


def main(argv=None):
    args = parse_args(argv)
    args.cases = str(Path(args.cases).resolve())
    if args.worker:
        return worker_main(args)
    if args.selftest:
        return selftest(args)
    if args.report_only:
        print(report_only(args.report_only))
        return 0
    return parent_main(args)


if __name__ == '__main__':
    sys.exit(main())
