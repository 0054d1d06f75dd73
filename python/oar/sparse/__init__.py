"""oar.sparse: COO and CSR sparse tensors and their functions (Paddle 2.6's paddle.sparse).

A sparse tensor holds dense index and value tensors; its functions are dense ops on those, so they run
on every device and are differentiable with respect to the values and the dense operands (decision 94,
docs/sparse.md)."""
from . import nn  # noqa: F401
from .ops import *  # noqa: F401,F403
from .ops import __all__ as _ops_all
from .tensor import SparseCooTensor, SparseCsrTensor, _install_tensor_methods, sparse_coo_tensor, sparse_csr_tensor

_install_tensor_methods()

__all__ = ["sparse_coo_tensor", "sparse_csr_tensor", "SparseCooTensor", "SparseCsrTensor"] + list(_ops_all)
