"""What 8.3's custom backward buys over gradient checkpointing (docs/08-long-sequences.md).

Checkpointing the teaching loop per query block also trains in O(n) memory (coarser than
Rabe and Staats, 2021, who checkpoint each key chunk): the forward keeps no intermediates, and the backward recomputes one query
block at a time. But while autograd differentiates that block, it holds the block's
intermediates for all n_k keys; the custom backward of ``chunked_attention`` holds one
(block_q, block_k) tile at a time. Measured in bytes of live tensors (deterministic),
forward and backward, n = 2048, d = 64, block_q = 256, one head, float32.
"""

from __future__ import annotations

import weakref

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten
from torch.utils.checkpoint import checkpoint

from selfattn.chunked import chunked_attention, keys_only_attention
from selfattn.functional import scaled_dot_product_attention

N, D, BLOCK_Q = 2048, 64, 256


class LiveTensorBytes(TorchDispatchMode):
    """Peak bytes of the tensors that PyTorch operators create (as in docs/labs/cost.py).

    A storage counts from the first tensor that holds it until the last one is freed.
    """

    def __init__(self) -> None:
        super().__init__()
        self.live = self.peak = 0
        self.refs: dict[int, int] = {}  # storage address -> tensors holding it

    def _release(self, ptr: int, nbytes: int) -> None:
        self.refs[ptr] -= 1
        if self.refs[ptr] == 0:
            del self.refs[ptr]
            self.live -= nbytes

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor) and not t._is_view():
                storage = t.untyped_storage()
                ptr, nbytes = storage.data_ptr(), storage.nbytes()
                if nbytes == 0:
                    continue
                if ptr not in self.refs:
                    self.refs[ptr] = 0
                    self.live += nbytes
                    self.peak = max(self.peak, self.live)
                self.refs[ptr] += 1
                weakref.finalize(t, self._release, ptr, nbytes)
        return out


def checkpointed(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """The teaching loop, checkpointed per query block: no intermediates kept."""
    blocks = [
        checkpoint(keys_only_attention, q[i : i + BLOCK_Q], k, v, use_reentrant=False)
        for i in range(0, q.shape[-2], BLOCK_Q)
    ]
    return torch.cat(blocks, dim=-2)  # (n_q, d_v)


PATHS = {
    "explicit": lambda q, k, v: scaled_dot_product_attention(q, k, v)[0],
    "checkpoint": checkpointed,
    "chunked": lambda q, k, v: chunked_attention(q, k, v, block_q=BLOCK_Q),
}


def peak_mib(name: str) -> tuple[float, float]:
    """(forward peak, forward + backward peak) in MiB of live tensors."""
    torch.manual_seed(0)
    q, k, v = (torch.randn(N, D, requires_grad=True) for _ in range(3))
    g = torch.randn(N, D)
    with LiveTensorBytes() as mode:
        out = PATHS[name](q, k, v)
        forward = mode.peak
        grads = torch.autograd.grad(out, (q, k, v), g)
        del out
    assert all(torch.isfinite(t).all() for t in grads)
    return forward / 2**20, mode.peak / 2**20


def test_checkpointing_is_o_n_and_the_custom_backward_halves_its_peak() -> None:
    mib = {name: peak_mib(name) for name in PATHS}
    print({name: tuple(round(x, 1) for x in pair) for name, pair in mib.items()})
    # an (n, n) float32 matrix is 16 MiB: the explicit path holds scores and weights
    assert mib["explicit"][1] > 32, mib["explicit"]
    # checkpointing keeps no intermediates in the forward: output-sized memory only
    assert mib["checkpoint"][0] < 4, mib["checkpoint"]
    # its backward holds one query block's intermediates for all n_k keys:
    # a (BLOCK_Q, N) float32 strip is 2 MiB, and autograd keeps several of them
    assert 6 < mib["checkpoint"][1] < 16, mib["checkpoint"]
    # the custom backward: O and lse in the forward, one tile at a time in the backward
    assert mib["chunked"][1] < 7, mib["chunked"]
    assert mib["checkpoint"][1] > 1.5 * mib["chunked"][1], mib
    assert mib["explicit"][1] > 4 * mib["checkpoint"][1], mib
