"""A fake CUDA device on a CPU-only machine, to catch a tensor left on the CPU.

Inside ``with fake_cuda():`` every tensor that code puts on ``"cuda"`` (a factory with
``device="cuda"`` or ``device=t.device``, ``t.to("cuda")``, ``t.cuda()``, ``t.to(other)``,
``module.to("cuda")``) becomes a :class:`FakeCudaTensor`. It is not on the CPU: its
``device`` is ``meta`` (autograd cannot use a ``cuda`` device in a torch built without
CUDA; ``"meta"`` and ``"cuda"`` both mean the fake device inside the block). But unlike a
real meta tensor it holds a CPU tensor that does the arithmetic, so code that reads values
(``.item()``, ``bool(t.any())``, ``.tolist()``, ``float(t)``, data-dependent shapes) runs as
it would on a GPU, with the CPU's values. Factories that torch itself calls with the fake
device's options (inside SDPA, or autograd's gradient buffers) get values too.

Every aten operation that meets a fake device tensor checks the devices of its tensor
arguments with CUDA's rule: all on one device, except a CPU tensor with 0 dims (a
scalar), the source of a copy (``copy_``, ``_to_copy``), and CPU index tensors of
``index`` / ``index_put_``. A CPU random generator used for a device tensor is refused
too. Anything else raises the RuntimeError a GPU would raise, e.g.::

    Expected all tensors to be on the same device, but found at least two devices,
    meta (the fake CUDA) and cpu! (fake CUDA: aten.where.self, a torch.bool tensor ...)

What it cannot see: CUDA kernels themselves (their numerics, their memory, which SDPA
backend CUDA would pick: here SDPA takes torch's math path, asynchronous errors),
``torch.cuda.*`` calls (``is_available()`` stays False), ``data_ptr()`` and ``numpy()``
of a device tensor, code that branches on ``t.is_cuda`` or ``t.device.type == "cuda"``
(False here), and a gradient that flows from a device tensor back to the CPU tensor it
was copied from (``.to("cuda")`` of a CPU leaf starts a new leaf: make tensors on the
device, then ``requires_grad_()``). tests/package/test_device.py runs the package and the book's
CUDA-only blocks under it; ``make gpu-check`` runs the same tests on a real GPU.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

aten = torch.ops.aten
DEVICE = torch.device("meta")  # what .device reports (autograd cannot use "cuda" without CUDA)

# Ops whose tensor arguments may sit on two devices on a real GPU.
_COPIES = {aten.copy_.default, aten._to_copy.default, aten.lift_fresh.default,
           aten._copy_from.default, aten._copy_from_and_resize.default}
_INDEXING = {aten.index.Tensor, aten.index_put_.default, aten.index_put.default,
             aten._index_put_impl_.default}


def _is_cuda(device: object) -> bool:
    """True for "cuda", "cuda:0", a bare index and "meta": all mean the fake device."""
    if device is None:
        return False
    if isinstance(device, int):
        return True  # a bare index means a CUDA device, as in torch
    return torch.device(device).type in ("cuda", "meta")  # type: ignore[arg-type]


class FakeCudaTensor(torch.Tensor):
    """A tensor on the fake device (``device`` reports ``meta``); its values live in ``self.elem`` (CPU)."""

    elem: torch.Tensor
    __torch_function__ = torch._C._disabled_torch_function_impl  # type: ignore[assignment]

    @staticmethod
    def __new__(cls, elem: torch.Tensor) -> FakeCudaTensor:
        assert type(elem) is torch.Tensor and elem.device.type == "cpu", (type(elem), elem.device)
        r = torch.Tensor._make_wrapper_subclass(  # type: ignore[attr-defined]
            cls, elem.size(), strides=elem.stride(), storage_offset=elem.storage_offset(),
            dtype=elem.dtype, layout=elem.layout, device=DEVICE, requires_grad=elem.requires_grad)
        r.elem = elem.detach() if elem.requires_grad else elem
        return r  # type: ignore[no-any-return]

    def __repr__(self) -> str:  # type: ignore[override]
        return f"FakeCudaTensor({self.elem!r})"

    @classmethod
    def __torch_dispatch__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        _check_devices(func, args, kwargs)
        mine: dict[int, FakeCudaTensor] = {}

        def unwrap(t: Any) -> Any:
            if isinstance(t, FakeCudaTensor):
                mine[id(t.elem)] = t
                return t.elem
            return t

        to_device = kwargs.get("device")  # _to_copy, new_empty_strided (autograd), ...
        if to_device is not None:
            kwargs = {**kwargs, "device": torch.device("cpu")}
        out = func(*tree_map(unwrap, args), **tree_map(unwrap, kwargs))
        if to_device is not None and not _is_cuda(to_device):
            return out  # .cpu(), .to("cpu"): a plain tensor again

        def wrap(t: Any) -> Any:
            if not isinstance(t, torch.Tensor):
                return t
            if id(t) in mine:  # an in-place op returns its (fake CUDA) argument
                return mine[id(t)]
            return FakeCudaTensor(t) if t.device.type == "cpu" else t

        return tree_map(wrap, out)


def _check_devices(func: Any, args: Any, kwargs: Any) -> None:
    """RuntimeError where a GPU would raise one: a CPU tensor (not a scalar) meets a CUDA one."""
    flat, _ = tree_flatten((args, kwargs))
    if func in _COPIES:
        return
    if func in _INDEXING:  # the index tensors (args[1]) may stay on the CPU
        flat, _ = tree_flatten(([args[0], *args[2:]], kwargs))
    gen = kwargs.get("generator")
    if gen is not None and gen.device.type != "cuda":
        raise RuntimeError(f"Expected a 'cuda' device type for generator but found "
                           f"'{gen.device.type}' (fake CUDA: {func})")
    for t in flat:
        if isinstance(t, torch.Tensor) and not isinstance(t, FakeCudaTensor):
            if t.device.type == "cpu" and t.dim() == 0:
                continue  # a CPU scalar may meet CUDA tensors
            raise RuntimeError(
                "Expected all tensors to be on the same device, but found at least two "
                f"devices, meta (the fake CUDA) and {t.device}! (fake CUDA: {func}, "
                f"a {t.dtype} tensor of shape {tuple(t.shape)})")


def to_fake(t: torch.Tensor) -> torch.Tensor:
    """A CPU tensor (or a fake CUDA one) on the fake CUDA device."""
    if isinstance(t, FakeCudaTensor):
        return t
    elem = t.detach()
    if type(elem) is not torch.Tensor:  # a Parameter's values
        elem = elem.as_subclass(torch.Tensor)
    return FakeCudaTensor(elem)


def _to_meta(device: object) -> object:
    return torch.device("meta") if _is_cuda(device) else device


class _CudaToMeta(TorchFunctionMode):
    """Turns "cuda" into "meta" before torch would initialise CUDA (it cannot, here)."""

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = dict(kwargs or {})
        if func is torch.Tensor.cuda:
            device = args[1] if len(args) > 1 else kwargs.get("device")
            if device is not None and not _is_cuda(device):
                raise RuntimeError(f"Invalid device, must be cuda device, got {device}")
            return args[0].to("meta")
        if func is torch.Tensor.tolist and isinstance(args[0], FakeCudaTensor):
            return args[0].elem.tolist()  # torch refuses .tolist() of a subclass
        if func is torch.Tensor.to:
            args = (args[0], *(_to_meta(a) if isinstance(a, (str, torch.device, int)) and not isinstance(a, bool)
                               else a for a in args[1:]))
        if func is torch._C._nn._parse_to:  # Module.to(device=...) parses it first
            return func(*args, **kwargs)
        if _is_cuda(kwargs.get("device")):  # a factory: make it on the CPU, then wrap it
            if isinstance(kwargs.get("generator"), torch.Generator):
                _check_devices(func, (), {"generator": kwargs["generator"]})
            out = func(*args, **{**kwargs, "device": torch.device("cpu")})
            if func is torch.Tensor.to and out is args[0]:
                out = out.clone()  # a move to the device copies; it never aliases the CPU tensor
            return tree_map(lambda t: to_fake(t) if isinstance(t, torch.Tensor) else t, out)
        return func(*args, **kwargs)


class _MetaHasValues(TorchDispatchMode):
    """A tensor made on "meta" (a factory, or a copy from the CPU) gets CPU values."""

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        flat, _ = tree_flatten((args, kwargs))
        if any(isinstance(t, FakeCudaTensor) for t in flat):
            return func(*args, **kwargs)  # FakeCudaTensor.__torch_dispatch__
        device = kwargs.get("device")
        if device is not None and torch.device(device).type == "meta":
            if kwargs.get("generator") is not None:
                _check_devices(func, (), {"generator": kwargs["generator"]})
            out = func(*args, **{**kwargs, "device": torch.device("cpu")})
            return tree_map(lambda t: to_fake(t) if isinstance(t, torch.Tensor) else t, out)
        if any(isinstance(t, torch.Tensor) and t.device.type == "meta" for t in flat):
            raise RuntimeError(f"fake CUDA: {func} met a meta tensor without values")
        return func(*args, **kwargs)


@contextlib.contextmanager
def fake_cuda() -> Iterator[None]:
    """Run the body with "cuda" (and "meta") meaning the fake device of this module."""
    with _CudaToMeta(), _MetaHasValues():
        yield


def to_cpu(t: Any) -> Any:
    """A plain CPU tensor with the values of ``t`` (fake CUDA or not)."""
    return t.elem if isinstance(t, FakeCudaTensor) else t.cpu()
