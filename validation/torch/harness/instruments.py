"""The two exact instruments of the harness, and the optimizer-state count.

* ``SavedTensors``: every tensor autograd saves for backward passes through a
  ``torch.autograd.graph.saved_tensors_hooks`` pack hook.  Each distinct storage is counted once, by the
  address of its first byte, and sorted into three classes: parameters, registered shared buffers (RoPE
  tables, masks: whatever the caller declares shared) and activations (everything else).
* ``LiveBytes``: the CPU allocator reports every allocation and free to the profiler when
  ``profile_memory=True``; kineto keeps them as ``[memory]`` events, in the order they happened on the
  thread.  Replaying their signed sizes from a known starting total gives the exact live bytes at every
  moment, so the peak between two markers is exact too.  Markers are themselves allocator events (a
  uniquely sized byte tensor allocated and freed at once), so they are ordered exactly among the others.
* ``optimizer_state_bytes``: the distinct storages held in ``optimizer.state``.

Each class has a self-test (``self_test()``) on operations whose saved tensors and peaks are known by hand.
"""
import gc
import warnings

import torch

MARK_BASE = 7_340_033  # marker sizes: MARK_BASE + id bytes; odd, and far from any tensor of the grid


def storage_key(t):
    """(address, bytes) of the whole storage a tensor views (torch 1.13: TypedStorage._storage)."""
    s = t.storage()
    return s.data_ptr(), s.nbytes()


def distinct_bytes(tensors):
    seen = {}
    for t in tensors:
        if t is None or not torch.is_tensor(t):
            continue
        ptr, n = storage_key(t)
        if n:
            seen[ptr] = n
    return sum(seen.values())


def live_tensor_bytes():
    """Bytes of every storage reachable from Python right now (the starting total for LiveBytes)."""
    gc.collect()
    with warnings.catch_warnings():  # touching deprecated module attributes warns; it changes nothing
        warnings.simplefilter("ignore")
        return distinct_bytes(o for o in gc.get_objects() if torch.is_tensor(o))


class SavedTensors:
    """Counts what autograd saves for backward while the context is active."""

    def __init__(self, params=(), shared=()):
        self.param_ptrs = {storage_key(p)[0] for p in params}
        self.shared_ptrs = {storage_key(b)[0] for b in shared if b is not None}
        self.activations = {}
        self.params = {}
        self.shared = {}
        self.count = 0
        self._hooks = None

    def _pack(self, t):
        self.count += 1
        ptr, n = storage_key(t)
        if ptr in self.param_ptrs:
            self.params[ptr] = n
        elif ptr in self.shared_ptrs:
            self.shared[ptr] = n
        elif n:
            # Hold the storage, so its address cannot be reused by another tensor while we count.
            self.activations[ptr] = (n, t)
        return t

    @staticmethod
    def _unpack(t):
        return t

    def __enter__(self):
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack)
        self._hooks.__enter__()
        return self

    def __exit__(self, *exc):
        self._hooks.__exit__(*exc)

    @property
    def activation_bytes(self):
        return sum(n for n, _ in self.activations.values())

    @property
    def param_bytes(self):
        return sum(self.params.values())

    @property
    def shared_bytes(self):
        return sum(self.shared.values())

    def release(self):
        self.activations.clear()


class LiveBytes:
    """Exact live CPU bytes over a region, from the allocator's own event stream."""

    def __init__(self):
        self._prof = None
        self._next_mark = 0
        self.marks = []  # names, in order
        self.start = 0

    def __enter__(self):
        self.start = live_tensor_bytes()
        self._prof = torch.autograd.profiler.profile(profile_memory=True, use_kineto=True)
        self._prof.__enter__()
        return self

    def __exit__(self, *exc):
        self._prof.__exit__(*exc)

    def mark(self, name):
        """Records a marker between two allocator events."""
        size = MARK_BASE + self._next_mark
        self._next_mark += 1
        self.marks.append(name)
        m = torch.empty(size, dtype=torch.uint8)
        del m

    def timeline(self):
        """Replays the events: returns {segment name: (peak, live at its end)}; segments start at marks."""
        events = [e for e in self._prof.kineto_results.events() if e.name() == "[memory]"]
        threads = {e.start_thread_id() for e in events}
        if len(threads) > 1:
            raise RuntimeError(f"allocator events from {len(threads)} threads: the replay order is not exact")
        live = self.start
        name, peak = "start", live
        segments = {}
        i = 0
        while i < len(events):
            n = events[i].nbytes()
            mark_id = n - MARK_BASE
            if 0 <= mark_id < len(self.marks) and i + 1 < len(events) and events[i + 1].nbytes() == -n:
                segments[name] = (peak, live)
                name, peak = self.marks[mark_id], live
                i += 2
                continue
            live += n
            peak = max(peak, live)
            i += 1
        segments[name] = (peak, live)
        return segments


def optimizer_state_bytes(optimizer):
    tensors = [v for state in optimizer.state.values() for v in state.values() if torch.is_tensor(v)]
    return distinct_bytes(tensors)


def self_test():
    """Checks both instruments on hand-countable cases; raises AssertionError on any mismatch."""
    torch.manual_seed(0)
    n = 1000
    # 1. sin saves its input; a view and its base are one storage; a parameter is counted apart.
    w = torch.nn.Parameter(torch.randn(n))
    x = torch.randn(4, n, requires_grad=True)
    with SavedTensors(params=[w]) as saved:
        y = x.sin()           # saves x: 4·n·4 bytes
        z = y[1:].cos()       # saves the view y[1:], i.e. y's storage: 4·n·4 bytes
        u = z * w             # saves z, 3 rows (for w's grad), and w (a parameter)
    assert saved.activation_bytes == (4 + 4 + 3) * n * 4, saved.activation_bytes
    assert saved.param_bytes == n * 4, saved.param_bytes
    u.sum().backward()
    # 2. the replayed peak of a known sequence: a (4n), b (8n) alive together, then c (2n) after a is freed.
    before = None
    with LiveBytes() as live:
        live.mark("work")
        a = torch.empty(n, dtype=torch.float32)
        b = torch.empty(2 * n, dtype=torch.float32)
        del a
        c = torch.empty(n // 2, dtype=torch.float32)
        live.mark("after")
        del b, c
    seg = live.timeline()
    start = seg["start"][1]
    assert seg["work"][0] - start == 12 * n, seg
    assert seg["work"][1] - start == 10 * n, seg
    assert seg["after"][1] == start, seg
    # 3. the starting total is every Python-reachable storage: a new tensor raises it by its size.
    base = live_tensor_bytes()
    keep = torch.empty(3 * n, dtype=torch.float64)
    assert live_tensor_bytes() - base == 24 * n
    del keep, before
    # 4. optimizer state: AdamW keeps exp_avg, exp_avg_sq (param size each) and a 4-byte step per tensor.
    p = torch.nn.Parameter(torch.randn(n))
    opt = torch.optim.AdamW([p])
    p.grad = torch.randn(n)
    opt.step()
    assert optimizer_state_bytes(opt) == 2 * n * 4 + 4, optimizer_state_bytes(opt)
    return True
