"""GPU tests of the Python binding: results, errors, CUDA graphs, torch.compile.

Run from the repository root on a machine with an sm_90a GPU:
    PYTHONPATH=runtime/python python3 tests/gpu/test_binding.py
"""
import re
import sys
import traceback

import torch

import gdngen

DEV = "cuda"


def inputs(lens, H=4, Hv=None, state=True, seed=0):
    Hv = Hv or H
    g = torch.Generator(device=DEV).manual_seed(seed)
    T, Ho = sum(lens), max(H, Hv)
    q = torch.randn(T, H, 128, device=DEV, generator=g).bfloat16()
    k = torch.nn.functional.normalize(torch.randn(T, H, 128, device=DEV, generator=g), dim=-1)
    v = torch.randn(T, Hv, 128, device=DEV, generator=g).bfloat16()
    alpha = torch.rand(T, Ho, device=DEV, generator=g) * 0.2 + 0.8
    beta = torch.sigmoid(torch.randn(T, Ho, device=DEV, generator=g))
    cu = torch.tensor([0] + list(torch.tensor(lens).cumsum(0)), device=DEV, dtype=torch.int32)
    h0 = 0.1 * torch.randn(len(lens), Ho, 128, 128, device=DEV, generator=g) if state else None
    return dict(q=q, k=k.bfloat16(), v=v, alpha=alpha, beta=beta, cu_seqlens=cu,
                initial_state=h0, scale=0.73)


def recurrence(q, k, v, alpha, beta, cu_seqlens, initial_state, scale):
    """The fp64 token recurrence of gdn.md, per sequence, all heads at once."""
    T, H, _ = q.shape
    Hv = v.shape[1]
    Ho = max(H, Hv)
    rq, rk, rv = (x.double().repeat_interleave(Ho // x.shape[1], dim=1) for x in (q, k, v))
    o = torch.zeros(T, Ho, 128, dtype=torch.float64, device=DEV)
    cu = cu_seqlens.tolist()
    finals = []
    for n in range(len(cu) - 1):
        S = (initial_state[n].double() if initial_state is not None
             else torch.zeros(Ho, 128, 128, dtype=torch.float64, device=DEV))
        for t in range(cu[n], cu[n + 1]):
            S = S * alpha[t].double()[:, None, None]
            pred = torch.einsum("hvk,hk->hv", S, rk[t])
            u = beta[t].double()[:, None] * (rv[t] - pred)
            S = S + u[:, :, None] * rk[t][:, None, :]
            o[t] = scale * torch.einsum("hvk,hk->hv", S, rq[t])
        finals.append(S)
    return o, torch.stack(finals)


def rel(x, ref):
    return ((x.double() - ref).norm() / ref.norm()).item()


def test_matches_recurrence():
    a = inputs([100, 1, 64, 65])
    o, ht = gdngen.chunk_gated_delta_rule(**a, output_final_state=True)
    ro, rh = recurrence(**a)
    eo, eh = rel(o, ro), rel(ht, rh)
    assert eo <= 5e-3 and eh <= 5e-3, (eo, eh)
    return "o %.2e, state %.2e" % (eo, eh)


def test_gva_int64_cu_seqlens():
    a = inputs([130, 70], H=2, Hv=4)
    a["cu_seqlens"] = a["cu_seqlens"].long()
    o, ht = gdngen.chunk_gated_delta_rule(**a, output_final_state=True)
    ro, rh = recurrence(**a)
    assert o.shape == (200, 4, 128) and ht.shape == (2, 4, 128, 128)
    assert rel(o, ro) <= 5e-3 and rel(ht, rh) <= 5e-3
    return "shapes and errors ok"


def test_fast_and_checked_paths_agree():
    # int32 cu_seqlens takes the one-test-per-tensor path; int64 and a
    # strided int32 view take the checks one by one and a converted copy.
    a = inputs([90, 1, 200, 64])
    o1, h1 = gdngen.chunk_gated_delta_rule(**a, output_final_state=True)
    assert gdngen._fast(a["q"], a["k"], a["v"], a["alpha"], a["beta"], a["scale"],
                        a["initial_state"], a["cu_seqlens"], False) is not None
    b = dict(a, cu_seqlens=a["cu_seqlens"].long())
    o2, h2 = gdngen.chunk_gated_delta_rule(**b, output_final_state=True)
    wide = torch.zeros(2 * a["cu_seqlens"].numel(), dtype=torch.int32, device=DEV)
    wide[::2] = a["cu_seqlens"]
    c = dict(a, cu_seqlens=wide[::2])
    assert gdngen._fast(c["q"], c["k"], c["v"], c["alpha"], c["beta"], c["scale"],
                        c["initial_state"], c["cu_seqlens"], False) is None
    o3, h3 = gdngen.chunk_gated_delta_rule(**c, output_final_state=True)
    for o, h in ((o2, h2), (o3, h3)):
        assert torch.equal(o1, o) and torch.equal(h1, h), "the two paths differ"
    return "int32, int64 and a strided int32 cu_seqlens give equal outputs"


def test_errors():
    a = inputs([50])
    bad = [
        dict(q=a["q"].float()),                             # dtype
        dict(k=a["k"][:, :3].contiguous()),                 # head relation 4/3/4
        dict(alpha=a["alpha"].half()),                      # alpha dtype
        dict(initial_state=a["initial_state"][:, :2]),      # state shape
        dict(q=a["q"].cpu()),                               # device
        dict(scale=float("nan")),                           # scale
    ]
    for change in bad:
        b = dict(a, **change)
        try:
            gdngen.chunk_gated_delta_rule(**b)
        except ValueError as e:
            assert str(e), change
            continue
        raise AssertionError("accepted a bad call: %s" % list(change))
    return "%d bad calls raised ValueError" % len(bad)


def test_query_route():
    a = inputs([64])
    r = gdngen.query_route(**a)
    assert r == "generic", r
    return r


def test_build_id():
    b = gdngen.build_id()
    assert re.fullmatch(r"gdngen \d+\.\d+\.\d+, kernels [0-9a-f]{16}", b), b
    assert b.startswith("gdngen " + gdngen.version() + ","), b
    ops = gdngen.value_operands()
    assert ops in ("fp16", "bf16"), ops
    return f"{b}, value operands {ops}"


def test_cuda_graph():
    a = inputs([300, 17, 129])
    static = {k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in a.items()}
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        gdngen.chunk_gated_delta_rule(**static, output_final_state=True)  # warm-up
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = gdngen.chunk_gated_delta_rule(**static, output_final_state=True)
    for seed in (1, 2):
        fresh = inputs([300, 17, 129], seed=seed)
        for k, v in fresh.items():
            if isinstance(v, torch.Tensor):
                static[k].copy_(v)
        g.replay()
        eo, eh = gdngen.chunk_gated_delta_rule(**fresh, output_final_state=True)
        torch.cuda.synchronize()
        assert torch.equal(out[0], eo) and torch.equal(out[1], eh), "replay differs"
    return "2 replays with fresh inputs equal eager calls"


def test_torch_compile():
    a = inputs([200, 56])

    # The op's outputs are compared bit for bit; the reduction after it is
    # compiled by inductor, whose summation order may differ from eager's.
    def f(q, k, v, alpha, beta, cu_seqlens, initial_state, scale):
        o, ht = gdngen.chunk_gated_delta_rule(q, k, v, alpha, beta, scale, initial_state,
                                              True, cu_seqlens)
        return o, ht, o.float().sum(dim=-1)

    cf = torch.compile(f, fullgraph=True)
    co, ch, cs = cf(**a)
    eo, eh, es = f(**a)
    assert torch.equal(co, eo) and torch.equal(ch, eh), "op outputs differ"
    assert torch.allclose(cs, es, rtol=1e-5, atol=1e-4), "reductions differ"
    return "fullgraph compile equals eager"


def main():
    tests = [test_matches_recurrence, test_gva_int64_cu_seqlens,
             test_fast_and_checked_paths_agree, test_errors, test_query_route,
             test_build_id, test_cuda_graph, test_torch_compile]
    failed = 0
    for t in tests:
        try:
            print("PASS %s: %s" % (t.__name__, t()))
        except Exception:
            failed += 1
            print("FAIL %s:\n%s" % (t.__name__, traceback.format_exc()))
        sys.stdout.flush()
    print("binding: %d passed, %d failed" % (len(tests) - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
