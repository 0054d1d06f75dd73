# The gpu plugin's sources, shared by the CUDA build (plugins/cuda) and the ROCm build (plugins/rocm):
# one GPU source tree, the vendor differences in gpu_runtime.h and gpu_primitives.cuh.
# Kernels and runtime, built by both:
set(OAR_GPU_COMMON_SOURCES
  plugin.cc runtime.cc vendor.cc
  elementwise.cu unary.cu activation.cu creation.cu cast.cu
  dnn_pool.cu optim.cu amp.cu own_blas.cu
  reduce.cu scan_sort.cu softmax_norm.cu batch_norm.cu index.cu)
# Through CUDA's libraries (cuBLASLt, cuDNN, NCCL):
set(OAR_GPU_CUDA_LIBRARY_SOURCES blas.cc dnn.cc collectives.cc)
# Where no vendor library was found (ROCm without rocBLAS/MIOpen/RCCL): own matmul/conv, no collectives.
set(OAR_GPU_NO_LIBRARY_SOURCES no_libs.cc collectives_none.cc)
