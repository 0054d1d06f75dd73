"""Builds this folder's custom ops into an installable package `custom_setup_ops`:

    pip install --no-build-isolation .        # or: python setup.py install

then `import custom_setup_ops; custom_setup_ops.custom_relu(x)`. relu_op.cu joins the build when nvcc is
there (CUDAExtension); set OAR_SAMPLE_CUDA=0 to leave it out.
"""
import os

from oar.utils.cpp_extension import CUDA_HOME, CppExtension, CUDAExtension, setup

sources = ["relu_op.cc", "custom_linear.cc"]
if CUDA_HOME is not None and os.environ.get("OAR_SAMPLE_CUDA", "1") != "0":
    extension = CUDAExtension(sources=sources + ["relu_op.cu"])
else:
    extension = CppExtension(sources=sources)

setup(name="custom_setup_ops", ext_modules=extension)
