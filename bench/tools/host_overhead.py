import sys, time, torch
sys.path.insert(0, "runtime/python")
import gdngen
T, H = 512, 8
q = torch.randn(T, H, 128, device="cuda", dtype=torch.bfloat16)
k = torch.nn.functional.normalize(torch.randn(T, H, 128, device="cuda"), dim=-1).bfloat16()
v = torch.randn(T, H, 128, device="cuda", dtype=torch.bfloat16)
a = torch.rand(T, H, device="cuda") * 0.2 + 0.8
b = torch.sigmoid(torch.randn(T, H, device="cuda"))
for _ in range(50): gdngen.chunk_gated_delta_rule(q, k, v, a, b, 0.73)
torch.cuda.synchronize()
t0 = time.perf_counter()
for _ in range(1000): gdngen.chunk_gated_delta_rule(q, k, v, a, b, 0.73)
t1 = time.perf_counter()
torch.cuda.synchronize()
print("python host time per call: %.1f us" % ((t1 - t0) * 1e3))
import cProfile, pstats
pr = cProfile.Profile(); pr.enable()
for _ in range(300): gdngen.chunk_gated_delta_rule(q, k, v, a, b, 0.73)
pr.disable(); torch.cuda.synchronize()
pstats.Stats(pr).sort_stats("tottime").print_stats(12)
