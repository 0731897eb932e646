#!/usr/bin/env python3
"""The course's static estimator (section 3.1, check 3.1) in plain Python, timed as the baseline for
headroom's static estimate. Written for the benchmark; prints nanoseconds per call."""
import time


def estimate(params, method, adapter_params=0, bits=16, grad_accum_buffer=False):
    """Static training state in GB (1e9 bytes): weights, grads, master, optimizer."""
    gb = 1e9
    if method == "full":
        out = {"weights": 2 * params, "adapter_weights": 0,
               "grads": 2 * params + (2 * params if grad_accum_buffer else 0),
               "master": 4 * params, "optimizer": 8 * params}
    else:
        out = {"weights": params * bits / 8, "adapter_weights": 2 * adapter_params,
               "grads": 2 * adapter_params, "master": 4 * adapter_params,
               "optimizer": 8 * adapter_params}
    out = {k: v / gb for k, v in out.items()}
    parts = ("adapter_weights", "grads", "master", "optimizer")
    out["total"] = out["weights"] + sum(out[k] for k in parts)
    return out


def adapters():
    d, d_kv, d_ff, L, r = 4096, 1024, 14336, 32, 16
    shapes = [(d, d), (d, d_kv), (d, d_kv), (d, d), (d, d_ff), (d, d_ff), (d_ff, d)]
    return L * sum(r * (i + o) for i, o in shapes)


def main():
    assert estimate(8e9, "full")["total"] == 128.0
    n = 200_000
    start = time.perf_counter_ns()
    for _ in range(n):
        estimate(8e9, "full")
    static_ns = (time.perf_counter_ns() - start) / n
    start = time.perf_counter_ns()
    for _ in range(n):
        estimate(8e9, "lora", adapters())
    lora_ns = (time.perf_counter_ns() - start) / n
    print(f"python_static_full_ns {static_ns:.1f}")
    print(f"python_static_lora_with_adapter_count_ns {lora_ns:.1f}")


if __name__ == "__main__":
    main()
