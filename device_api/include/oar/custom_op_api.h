/* oar custom-op ABI: the only interface between the oar core and a custom operator library.
 *
 * Pure C99, same rules as device_api.h (docs/custom_op.md explains them):
 *  - A library exports one symbol, oar_custom_op_init (OAR_CUSTOM_OP_INIT_SYMBOL). The core calls it
 *    once with its services table; the library states its ABI version and registers its ops through
 *    services->register_op.
 *  - Every struct starts with its own size (`struct_size`); fields are only ever appended. A reader
 *    uses min(its sizeof, the struct_size it was given) and treats missing fields as zero / NULL.
 *  - Every fallible call returns an OarError* (NULL = success), created with services->error_new.
 *    Exceptions never cross: the header-only C++ layer (oar/extension.h) catches them at the boundary.
 *  - Version rule: the major must match exactly; minors within OAR_CUSTOM_OP_ABI_MINOR_WINDOW of the
 *    core's are accepted in both directions.
 *  - Tensors cross as opaque references (OarCTensor*) owned by the core and counted: the library takes
 *    a reference with tensor_retain and gives it back with tensor_release.
 */
#ifndef OAR_CUSTOM_OP_API_H_
#define OAR_CUSTOM_OP_API_H_

#include <oar/device_api.h>

#ifdef __cplusplus
extern "C" {
#endif

#define OAR_CUSTOM_OP_ABI_MAJOR 1
#define OAR_CUSTOM_OP_ABI_MINOR 0
#define OAR_CUSTOM_OP_ABI_MINOR_WINDOW 4

/* The most dims a tensor has (the core's limit). */
#define OAR_CUSTOM_MAX_DIMS 16

typedef struct OarCTensor OarCTensor;                     /* a reference to one core tensor */
typedef struct OarCustomOpRegistrar OarCustomOpRegistrar; /* the library being loaded */

/* Input flags (OarCustomOpDef.input_flags) and output flags (output_flags). */
enum { OAR_CUSTOM_INPUT_OPTIONAL = 1u << 0, OAR_CUSTOM_INPUT_VECTOR = 1u << 1 };
enum { OAR_CUSTOM_OUTPUT_VECTOR = 1u << 1 }; /* declared so the core can refuse it clearly (unsupported) */

/* Attribute types, parsed by the core from the "name: type" declarations. */
typedef enum OarCustomAttrType {
  OAR_CATTR_BOOL = 0,   /* "bool" */
  OAR_CATTR_INT = 1,    /* "int" */
  OAR_CATTR_INT64 = 2,  /* "int64_t" */
  OAR_CATTR_FLOAT = 3,  /* "float" */
  OAR_CATTR_DOUBLE = 4, /* "double" */
  OAR_CATTR_STRING = 5, /* "std::string" */
  OAR_CATTR_INTS = 6,   /* "std::vector<int>" */
  OAR_CATTR_INT64S = 7, /* "std::vector<int64_t>" */
  OAR_CATTR_FLOATS = 8, /* "std::vector<float>" */
  OAR_CATTR_DOUBLES = 9 /* "std::vector<double>" */
} OarCustomAttrType;

/* One attribute value as a kernel or inference callback sees it (pointers valid during the call). */
typedef struct OarCustomAttr {
  int32_t type;         /* OarCustomAttrType */
  int64_t i;            /* bool, int, int64_t */
  double f;             /* float, double */
  const char* s;        /* std::string */
  const int64_t* ints;  /* vectors of int / int64_t */
  const double* floats; /* vectors of float / double */
  int64_t count;        /* entries of a vector */
} OarCustomAttr;

/* Shapes and dtypes for infer_shape / infer_dtype. Inputs are flattened: declared input slot k spans
 * slot_counts[k] entries (1 for a plain input, 0 or 1 for an optional one, n for a vector).
 * The core fills the outputs with the defaults (an in-place output: its input's shape and dtype; any
 * other: the first input's) before the call. */
typedef struct OarCustomInfer {
  size_t struct_size;
  const char* op_name;
  int32_t num_inputs;
  const int32_t* input_ndims;       /* per flattened input */
  const int64_t* const* input_dims; /* per flattened input */
  const int32_t* input_dtypes;      /* OarDType per flattened input */
  int32_t num_slots;
  const int32_t* slot_counts;
  int32_t num_attrs;
  const OarCustomAttr* attrs; /* in declared order */
  int32_t num_outputs;
  int32_t* output_ndims;  /* written by infer_shape */
  int64_t* output_dims;   /* num_outputs * OAR_CUSTOM_MAX_DIMS, written by infer_shape */
  int32_t* output_dtypes; /* written by infer_dtype */
} OarCustomInfer;

/* One kernel call. Inputs are contiguous tensors on the call's device (NULL: an absent optional). */
typedef struct OarCustomCall {
  size_t struct_size;
  const char* op_name;
  int32_t num_inputs;
  OarCTensor* const* inputs; /* flattened as in OarCustomInfer; borrowed */
  int32_t num_slots;
  const int32_t* slot_counts;
  int32_t num_attrs;
  const OarCustomAttr* attrs;
  int32_t num_outputs;
  OarCTensor** outputs;    /* the kernel stores one new reference per output (NULL: none) */
  const char* device_type; /* "cpu", "sim", "gpu", ... */
  int32_t device;
  void* stream; /* the device's OarStream (NULL: synchronous) */
  /* Written by the kernel: how many outputs it returned, in order (the core sets -1 first; -1 left:
   * the non-NULL entries count). Fewer than num_outputs: the rest are the op's in-place outputs. */
  int32_t num_returned;
} OarCustomCall;

typedef OarError* (*OarCustomKernelFn)(void* user_data, OarCustomCall* call);
typedef OarError* (*OarCustomInferFn)(void* user_data, OarCustomInfer* infer);

typedef struct OarCustomKernel {
  size_t struct_size;
  const char* device_type; /* NULL: every device type (the kernel checks the place itself) */
  OarCustomKernelFn fn;
  void* user_data;
} OarCustomKernel;

/* One op. A gradient op is an ordinary op named "<forward>_grad" ("<forward>_grad_grad" for the
 * second order); its input and output names follow Paddle: "X" and "Out" for the forward's tensors,
 * "Out@GRAD" for the gradient of the forward's output Out, "X@GRAD" for the gradient it returns. */
typedef struct OarCustomOpDef {
  size_t struct_size;
  const char* name;
  int32_t num_inputs;
  const char* const* inputs;
  const uint32_t* input_flags; /* OAR_CUSTOM_INPUT_*; NULL: all plain */
  int32_t num_outputs;
  const char* const* outputs;
  int32_t num_attrs;
  const char* const* attrs; /* "name: type", as Paddle's Attrs({"k: int"}) */
  int32_t num_inplace;      /* pairs: output inplace_outputs[i] is input inplace_inputs[i] */
  const char* const* inplace_inputs;
  const char* const* inplace_outputs;
  int32_t num_kernels;
  const OarCustomKernel* kernels;
  OarCustomInferFn infer_shape; /* NULL: every output has the first input's shape */
  void* infer_shape_user;
  OarCustomInferFn infer_dtype; /* NULL: every output has the first input's dtype */
  void* infer_dtype_user;
  const uint32_t* output_flags; /* OAR_CUSTOM_OUTPUT_*; NULL: all plain */
} OarCustomOpDef;

/* What the core gives the library. */
typedef struct OarCustomOpServices {
  size_t struct_size;
  uint32_t abi_major;
  uint32_t abi_minor;
  OarError* (*error_new)(int32_t code, int64_t native_code, const char* message);
  void (*error_free)(OarError* error);
  const char* (*error_message)(const OarError* error);
  int32_t (*error_code)(const OarError* error);
  /* Only valid during oar_custom_op_init. */
  OarError* (*register_op)(OarCustomOpRegistrar* registrar, const OarCustomOpDef* def);

  /* Tensors. A tensor made by the core (empty, full, copy_to, reshape) comes with one reference. */
  void (*tensor_retain)(OarCTensor* t);
  void (*tensor_release)(OarCTensor* t);
  int32_t (*tensor_ndim)(const OarCTensor* t);
  const int64_t* (*tensor_dims)(const OarCTensor* t);
  int32_t (*tensor_dtype)(const OarCTensor* t);
  const char* (*tensor_device_type)(const OarCTensor* t); /* static string: "cpu", "sim", ... */
  int32_t (*tensor_device)(const OarCTensor* t);
  /* Address of element 0 (a device address on devices the host cannot read). */
  void* (*tensor_data)(const OarCTensor* t);
  int32_t (*tensor_is_contiguous)(const OarCTensor* t);
  OarError* (*tensor_empty)(int32_t ndim, const int64_t* dims, int32_t dtype, const char* device_type,
                            int32_t device, OarCTensor** out);
  /* A tensor of `dims` filled with `value` (converted to dtype), on the given device. */
  OarError* (*tensor_full)(int32_t ndim, const int64_t* dims, int32_t dtype, double value,
                           const char* device_type, int32_t device, OarCTensor** out);
  /* A copy on another device; complete (synchronised) when it returns. */
  OarError* (*tensor_copy_to)(const OarCTensor* t, const char* device_type, int32_t device, OarCTensor** out);
  /* A view with another shape (same numel; contiguous tensors only). */
  OarError* (*tensor_reshape)(const OarCTensor* t, int32_t ndim, const int64_t* dims, OarCTensor** out);
  /* Waits for the work queued on the default stream of the device. */
  OarError* (*synchronize)(const char* device_type, int32_t device);
  void* (*stream)(const char* device_type, int32_t device);
  /* A copy converted to another dtype, on the same device. */
  OarError* (*tensor_cast)(const OarCTensor* t, int32_t dtype, OarCTensor** out);
} OarCustomOpServices;

/* The library writes the ABI version it was built for into *abi_major / *abi_minor first, then registers
 * its ops. Registrations are held back and published only when init succeeded and the version is
 * accepted, so a refused library leaves nothing behind. */
typedef OarError* (*OarCustomOpInitFn)(const OarCustomOpServices* services, OarCustomOpRegistrar* registrar,
                                       uint32_t* abi_major, uint32_t* abi_minor);

#define OAR_CUSTOM_OP_INIT_SYMBOL "oar_custom_op_init"

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* OAR_CUSTOM_OP_API_H_ */
