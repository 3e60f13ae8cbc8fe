"""prefill.py: one Gated Delta Net prefill through the gdngen Python binding.

Three sequences of 100, 64 and 37 tokens packed into T = 201, 4 heads (MHA),
random inputs made with torch on the GPU. Then the same call with int64
cu_seqlens, captured in a CUDA graph, and refused for bad input.

    make lib                            # builds build/libgdn.so
    python3 docs/examples/prefill.py    # needs torch with CUDA and an sm_90a GPU
"""
import itertools
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "runtime", "python"))

import torch  # noqa: E402

import gdngen  # noqa: E402

LENGTHS = [100, 64, 37]
H = 4
D = 128


def make_inputs(device):
    """Inputs shaped like a GDN layer's: k L2-normalised, alpha the decay itself."""
    g = torch.Generator(device=device).manual_seed(0)
    T, N = sum(LENGTHS), len(LENGTHS)
    q = torch.randn(T, H, D, device=device, generator=g).to(torch.bfloat16)
    k = torch.nn.functional.normalize(
        torch.randn(T, H, D, device=device, generator=g), dim=-1).to(torch.bfloat16)
    v = torch.randn(T, H, D, device=device, generator=g).to(torch.bfloat16)
    alpha = torch.empty(T, H, device=device).uniform_(0.8, 1.0, generator=g)
    beta = torch.sigmoid(torch.randn(T, H, device=device, generator=g))
    h0 = 0.1 * torch.randn(N, H, D, D, device=device, generator=g)
    cu = torch.tensor(list(itertools.accumulate([0] + LENGTHS)), dtype=torch.int32,
                      device=device)
    return dict(q=q, k=k, v=v, alpha=alpha, beta=beta, initial_state=h0, cu_seqlens=cu)


def checksum(t):
    return t.float().sum().item(), t.float().abs().sum().item()


def main():
    device = torch.device("cuda", torch.cuda.current_device())
    x = make_inputs(device)
    print("gdngen", gdngen.version(), "route", gdngen.query_route(**x))

    # The plain call, on torch's current stream.
    o, ht = gdngen.chunk_gated_delta_rule(**x, output_final_state=True)
    torch.cuda.synchronize()
    print("o", tuple(o.shape), o.dtype, "sum %.6f, sum |o| %.6f" % checksum(o))
    print("final_state", tuple(ht.shape), ht.dtype, "sum |S| %.6f" % checksum(ht)[1])
    print("o[0, 0, :8] =", o[0, 0, :8].float().tolist())

    # int64 cu_seqlens are accepted: converted to int32 on the device.
    x64 = dict(x, cu_seqlens=x["cu_seqlens"].to(torch.int64))
    o64, _ = gdngen.chunk_gated_delta_rule(**x64, output_final_state=True)
    print("int64 cu_seqlens: max |o64 - o| =", (o64.float() - o.float()).abs().max().item())

    # A CUDA graph. The calls above already created libgdn's handle, so the
    # capture only enqueues kernels. Warm up on a side stream, as torch advises.
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        gdngen.chunk_gated_delta_rule(**x, output_final_state=True)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        o_g, ht_g = gdngen.chunk_gated_delta_rule(**x, output_final_state=True)
    graph.replay()
    torch.cuda.synchronize()
    print("graph replay: max |o_g - o| =", (o_g.float() - o.float()).abs().max().item())

    # Replays read the captured tensors' current contents, cu_seqlens too:
    # new boundaries with the same N and T need no new capture.
    x["cu_seqlens"].copy_(torch.tensor([0, 50, 150, 201], dtype=torch.int32))
    graph.replay()
    torch.cuda.synchronize()
    print("replay with lengths 50, 100, 51: o sum %.6f" % checksum(o_g)[0])

    # Bad input raises ValueError with libgdn's sentence: 4/3/4 heads are not
    # MHA, GQA or GVA.
    try:
        gdngen.chunk_gated_delta_rule(x["q"], x["k"][:, :3].contiguous(), x["v"],
                                      cu_seqlens=x["cu_seqlens"])
    except ValueError as e:
        print("refused:", e)
    # and the binding's own checks: alpha must be fp32.
    try:
        gdngen.chunk_gated_delta_rule(x["q"], x["k"], x["v"], alpha=x["alpha"].half(),
                                      cu_seqlens=x["cu_seqlens"])
    except ValueError as e:
        print("refused:", e)


if __name__ == "__main__":
    main()
