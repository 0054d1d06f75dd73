/* oar device ABI: the only interface between the oar core and a backend plugin.
 *
 * Pure C99. Rules (docs/device_abi.md explains each):
 *  - A plugin exports exactly two symbols: oar_plugin_query (side-effect free) and oar_plugin_init.
 *  - Every struct starts with its own size (`struct_size`); fields are only ever appended. A reader
 *    uses min(its sizeof, the struct_size it was given) and treats missing fields as zero / NULL.
 *  - A NULL function pointer means "not implemented".
 *  - Every fallible call returns an OarError* (NULL = success). Errors are created and freed through
 *    the core's services table, so memory never crosses allocators. Exceptions never cross.
 *  - Version rule: the ABI major must match exactly; a plugin whose minor differs from the core's by
 *    at most OAR_ABI_MINOR_WINDOW is accepted, in both directions.
 *
 * Evolution rule (how a minor grows; docs/device_abi.md "Evolution rule"):
 *  - No signature ever changes. A new parameter comes as a new function (appended to a table, e.g.
 *    OarCoreServices.register_kernel_ex in 1.2) or as a field appended to a size-prefixed argument
 *    struct (OarKernelRegistration, OarSupportsQuery): never as an extra positional argument.
 *  - Fields are only appended, to the end of a struct; nothing is removed, retyped or reordered.
 *  - NULL (or a struct_size that ends before a field) means "not implemented"; each side checks it.
 *  - New enum values are appended; a value that an older peer cannot know (OAR_ERR_DECLINED) is only
 *    sent to a peer whose minor says it knows it.
 * History: 1.0 first layout; 1.1 appended OarCoreServices.trace_event and OarKernelApi.workspace;
 * 1.2 appended OAR_ERR_DECLINED, OarCoreServices.register_kernel_ex (kernels with a supports query);
 * 1.3 appended OarStreamTable.begin_capture / end_capture / graph_launch / graph_destroy (graph capture).
 */
#ifndef OAR_DEVICE_API_H_
#define OAR_DEVICE_API_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- versions -------------------------------------------------------------------------------- */
#define OAR_ABI_VERSION_MAJOR 1
#define OAR_ABI_VERSION_MINOR 3
#define OAR_ABI_MINOR_WINDOW 4

#if defined(_WIN32)
#define OAR_PLUGIN_EXPORT __declspec(dllexport)
#else
#define OAR_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* ---- errors ---------------------------------------------------------------------------------- */
typedef enum OarErrorCode {
  OAR_OK = 0,
  OAR_ERR_INVALID_ARGUMENT = 1, /* a value is wrong (shape, attribute, axis) */
  OAR_ERR_TYPE = 2,             /* a dtype is wrong or unsupported */
  OAR_ERR_OUT_OF_RANGE = 3,     /* an index is out of range */
  OAR_ERR_OUT_OF_MEMORY = 4,
  OAR_ERR_NOT_FOUND = 5,        /* no such op, kernel, device, attribute, file */
  OAR_ERR_UNIMPLEMENTED = 6,
  OAR_ERR_UNAVAILABLE = 7,      /* device or vendor library not present */
  OAR_ERR_PRECONDITION = 8,     /* called in the wrong state */
  OAR_ERR_ABI_MISMATCH = 9,
  OAR_ERR_INTERNAL = 10,
  OAR_ERR_EXTERNAL = 11,        /* the vendor library failed; see native_code */
  /* ABI 1.2. Not an error: "this kernel does not support this call and wrote nothing". Returned by a
   * kernel (before it enqueued any work) or by its supports query; the core then runs the call on
   * the CPU fallback, counted and under the fallback policy. Only a plugin built for >= 1.2 under a
   * core >= 1.2 may return it; from anyone else it is an ordinary error. The message is the reason. */
  OAR_ERR_DECLINED = 12
} OarErrorCode;

/* Opaque; created with OarCoreServices.error_new, owned by whoever receives it. */
typedef struct OarError OarError;

/* ---- data types (values are fixed forever; append only) ------------------------------------- */
typedef enum OarDType {
  OAR_DTYPE_BOOL = 0,
  OAR_DTYPE_INT8 = 1,
  OAR_DTYPE_UINT8 = 2,
  OAR_DTYPE_INT16 = 3,
  OAR_DTYPE_INT32 = 4,
  OAR_DTYPE_INT64 = 5,
  OAR_DTYPE_FLOAT16 = 6,
  OAR_DTYPE_BFLOAT16 = 7,
  OAR_DTYPE_FLOAT32 = 8,
  OAR_DTYPE_FLOAT64 = 9,
  OAR_DTYPE_COMPLEX64 = 10,
  OAR_DTYPE_COMPLEX128 = 11,
  OAR_DTYPE_COUNT = 12
} OarDType;

typedef enum OarLayout { OAR_LAYOUT_STRIDED = 0 } OarLayout;

/* ---- memory locations ------------------------------------------------------------------------ */
typedef enum OarMemKind {
  OAR_MEM_HOST = 0,        /* ordinary host memory (pageable) */
  OAR_MEM_DEVICE = 1,      /* the device's own memory; the core never dereferences it */
  OAR_MEM_PINNED_HOST = 2, /* page-locked host memory usable for async copies */
  OAR_MEM_UNIFIED = 3      /* managed memory visible to host and device */
} OarMemKind;

typedef struct OarMemLocation {
  int32_t kind;   /* OarMemKind */
  int32_t device; /* device index for OAR_MEM_DEVICE, else ignored */
} OarMemLocation;

/* Opaque handles owned by the plugin. */
typedef struct OarStream_* OarStream;
typedef struct OarEvent_* OarEvent;
typedef struct OarComm_* OarComm;
typedef struct OarGraph_* OarGraph; /* ABI 1.3: recorded stream work (graph capture) */

/* ---- tensors as kernels see them ------------------------------------------------------------- */
typedef struct OarTensorDesc {
  size_t struct_size;
  void* data;             /* base of the storage (device address); element i is at data + offset + ... */
  int32_t dtype;          /* OarDType */
  int32_t ndim;
  const int64_t* dims;    /* ndim entries */
  const int64_t* strides; /* ndim entries, in elements (0 for broadcast dimensions) */
  int64_t offset;         /* in elements, from data */
  int32_t device;         /* device index on the kernel's device type */
  int32_t layout;         /* OarLayout */
} OarTensorDesc;

/* ---- device properties ----------------------------------------------------------------------- */
enum {
  OAR_CAP_HOST_ACCESSIBLE = 1u << 0, /* the core may dereference OAR_MEM_DEVICE pointers */
  OAR_CAP_ASYNC_STREAMS = 1u << 1,   /* kernels run asynchronously to the host */
  OAR_CAP_FP16 = 1u << 2,
  OAR_CAP_BF16 = 1u << 3,
  OAR_CAP_FP64 = 1u << 4,
  OAR_CAP_UNIFIED_MEMORY = 1u << 5,
  OAR_CAP_PINNED_MEMORY = 1u << 6,
  /* Several ranks of one communicator may use the same device (in one process or in several), as
     Gloo's and the sim's may; NCCL's may not. Without it, collectives run one rank per device. */
  OAR_CAP_SHARED_DEVICE_RANKS = 1u << 7
};

typedef struct OarDeviceProperties {
  size_t struct_size;
  char name[128];
  uint64_t total_memory;      /* bytes */
  uint64_t capabilities;      /* OAR_CAP_* bits */
  uint64_t alloc_alignment;   /* allocator hint: alignment the device wants (bytes) */
  uint64_t alloc_chunk_bytes; /* allocator hint: preferred growth chunk (0 = core default) */
  int32_t compute_units;
  int32_t max_streams;        /* 0 = unlimited */
} OarDeviceProperties;

/* ---- plugin tables --------------------------------------------------------------------------- */
typedef struct OarDeviceTable {
  size_t struct_size;
  OarError* (*count)(int32_t* count);
  OarError* (*open)(int32_t device);
  OarError* (*close)(int32_t device);
  OarError* (*properties)(int32_t device, OarDeviceProperties* props);
  OarError* (*synchronize)(int32_t device); /* waits for all streams of the device */
  OarError* (*memory_info)(int32_t device, uint64_t* free_bytes, uint64_t* total_bytes);
} OarDeviceTable;

typedef struct OarMemoryTable {
  size_t struct_size;
  OarError* (*allocate)(int32_t device, int32_t kind, uint64_t bytes, void** ptr);
  OarError* (*free)(int32_t device, int32_t kind, void* ptr);
  /* Ordered on `stream`; stream may be NULL, then the call is synchronous. */
  OarError* (*memset)(int32_t device, void* ptr, int32_t value, uint64_t bytes, OarStream stream);
  /* One copy for every direction. Ordered on `stream` (of `device`), or synchronous when NULL.
   * A copy to host memory on a stream completes only when that stream is synchronized. */
  OarError* (*memcpy)(int32_t device, void* dst, OarMemLocation dst_loc, const void* src,
                      OarMemLocation src_loc, uint64_t bytes, OarStream stream);
} OarMemoryTable;

typedef struct OarStreamTable {
  size_t struct_size;
  /* priority: 0 is normal, larger is more urgent (a plugin maps it onto its own range, clamping). */
  OarError* (*create)(int32_t device, int32_t priority, OarStream* stream);
  OarError* (*destroy)(int32_t device, OarStream stream);
  OarError* (*synchronize)(int32_t device, OarStream stream);
  OarError* (*query)(int32_t device, OarStream stream, int32_t* done);
  OarError* (*wait_event)(int32_t device, OarStream stream, OarEvent event);
  /* Runs fn(arg) once all work queued before it on `stream` is done, in stream order. */
  OarError* (*launch_host_func)(int32_t device, OarStream stream, void (*fn)(void*), void* arg);
  /* ABI 1.3, graph capture (all four or none; NULL = capture unsupported). Between begin_capture and
   * end_capture, work enqueued on `stream` (kernels, memcpy, memset, host functions) is recorded, not run;
   * a plugin may refuse work it cannot replay (events, collectives) with OAR_ERR_UNIMPLEMENTED. A host synchronisation of a capturing stream (synchronize, query,
   * device synchronize, a memcpy to host memory on it or a memcpy from pageable host memory) is
   * OAR_ERR_PRECONDITION naming the capture; the capture stays open. end_capture returns the recorded
   * work as *graph (owned by the caller, freed with graph_destroy) and the stream runs work again.
   * graph_launch enqueues the recorded work on `stream` (any stream of the device, not capturing), in
   * recorded order, with the same device addresses and arguments: the caller keeps every buffer the
   * work touches alive and unmoved until the launch completed. A graph may be launched many times. */
  OarError* (*begin_capture)(int32_t device, OarStream stream);
  OarError* (*end_capture)(int32_t device, OarStream stream, OarGraph* graph);
  OarError* (*graph_launch)(int32_t device, OarGraph graph, OarStream stream);
  OarError* (*graph_destroy)(int32_t device, OarGraph graph);
} OarStreamTable;

enum { OAR_EVENT_DEFAULT = 0, OAR_EVENT_DISABLE_TIMING = 1 };

typedef struct OarEventTable {
  size_t struct_size;
  OarError* (*create)(int32_t device, uint32_t flags, OarEvent* event);
  OarError* (*destroy)(int32_t device, OarEvent event);
  OarError* (*record)(int32_t device, OarEvent event, OarStream stream);
  OarError* (*synchronize)(int32_t device, OarEvent event);
  OarError* (*query)(int32_t device, OarEvent event, int32_t* done);
  OarError* (*elapsed_ms)(int32_t device, OarEvent start, OarEvent end, float* ms);
} OarEventTable;

typedef enum OarReduceOp {
  OAR_REDUCE_SUM = 0,
  OAR_REDUCE_PROD = 1,
  OAR_REDUCE_MAX = 2,
  OAR_REDUCE_MIN = 3,
  OAR_REDUCE_AVG = 4
} OarReduceOp;

typedef struct OarCommUniqueId {
  uint8_t bytes[128];
} OarCommUniqueId;

/* Collectives. The communicator keeps the local device (which device of this process) separate
 * from the global rank. Buffers are device addresses; every call is ordered on `stream`. */
typedef struct OarCollectiveTable {
  size_t struct_size;
  OarError* (*get_unique_id)(OarCommUniqueId* id);
  OarError* (*comm_init)(int32_t local_device, int32_t nranks, int32_t rank, const OarCommUniqueId* id,
                         OarComm* comm);
  OarError* (*comm_destroy)(OarComm comm);
  OarError* (*all_reduce)(const void* send, void* recv, uint64_t count, int32_t dtype, int32_t op,
                          OarComm comm, OarStream stream);
  OarError* (*broadcast)(void* buf, uint64_t count, int32_t dtype, int32_t root, OarComm comm,
                         OarStream stream);
  OarError* (*reduce)(const void* send, void* recv, uint64_t count, int32_t dtype, int32_t op,
                      int32_t root, OarComm comm, OarStream stream);
  OarError* (*all_gather)(const void* send, void* recv, uint64_t send_count, int32_t dtype,
                          OarComm comm, OarStream stream);
  OarError* (*reduce_scatter)(const void* send, void* recv, uint64_t recv_count, int32_t dtype,
                              int32_t op, OarComm comm, OarStream stream);
  OarError* (*all_to_all)(const void* send, void* recv, uint64_t count_per_rank, int32_t dtype,
                          OarComm comm, OarStream stream);
  OarError* (*send)(const void* buf, uint64_t count, int32_t dtype, int32_t peer, OarComm comm,
                    OarStream stream);
  OarError* (*recv)(void* buf, uint64_t count, int32_t dtype, int32_t peer, OarComm comm,
                    OarStream stream);
  OarError* (*group_start)(void);
  OarError* (*group_end)(void);
  OarError* (*abort)(OarComm comm);
  /* Returns (as *error, owned by the caller) a failure that happened asynchronously, or NULL. */
  OarError* (*get_async_error)(OarComm comm, OarError** error);
} OarCollectiveTable;

/* A trace event: plain C, emitted by a plugin through OarCoreServices.trace_event. */
typedef struct OarTraceEvent {
  size_t struct_size;
  const char* name;
  const char* category; /* "kernel", "memcpy", "collective", ... */
  uint64_t start_ns;    /* steady clock, nanoseconds */
  uint64_t end_ns;
  int32_t device;
  uint64_t stream_id;
  uint64_t correlation_id;
} OarTraceEvent;

typedef struct OarProfilerTable {
  size_t struct_size;
  OarError* (*start)(void);
  OarError* (*stop)(void);
  /* Emits every buffered event through OarCoreServices.trace_event, then clears the buffer. */
  OarError* (*flush)(void);
} OarProfilerTable;

/* ---- kernels ----------------------------------------------------------------------------------- */
typedef struct OarKernelContext OarKernelContext; /* opaque, owned by the core for one call */

/* A kernel enqueues its work on the context's stream and returns; it must not block on it. */
typedef OarError* (*OarKernelFn)(OarKernelContext* ctx, void* user_data);

enum {
  /* The kernel handles any strides and offsets; without it the core passes contiguous inputs. */
  OAR_KERNEL_STRIDED_INPUTS = 1u << 0
};

typedef struct OarKernelDef {
  size_t struct_size;
  const char* op_name;   /* as in the core's op registry (docs/ops.md) */
  int32_t op_version;    /* schema version the kernel was written against */
  const int32_t* dtypes; /* dtypes of the dispatch key this kernel handles */
  int32_t num_dtypes;
  int32_t layout;        /* OarLayout */
  uint32_t flags;        /* OAR_KERNEL_* */
  OarKernelFn fn;
  void* user_data;
} OarKernelDef;

/* ABI 1.2: a kernel's side-effect free "can you run this call?" query, given at registration
 * through OarCoreServices.register_kernel_ex. The core asks it before every call of the kernel and
 * for placement decisions (oar::kernel_supports, oar._C.kernel_supports). It answers from dtypes,
 * dims, strides and attributes only: through OarKernelApi on `ctx` it can read inputs and outputs
 * (descriptors whose data is NULL; outputs as the core's shape inference made them), attributes
 * and the device; stream() is NULL, workspace() and resize_output() fail. It returns NULL (yes),
 * an error with code OAR_ERR_DECLINED whose message says why not, or another error (a failure). */
typedef struct OarSupportsQuery {
  size_t struct_size;
  const char* op_name;
  int32_t dtype;  /* OarDType of the dispatch key */
  int32_t device; /* device index */
  const OarKernelContext* ctx;
} OarSupportsQuery;

typedef OarError* (*OarKernelSupportsFn)(const OarSupportsQuery* query, void* user_data);

/* ABI 1.2: the size-prefixed registration struct of register_kernel_ex. Later minors append here. */
typedef struct OarKernelRegistration {
  size_t struct_size;
  const OarKernelDef* def;      /* required: what register_kernel takes */
  OarKernelSupportsFn supports; /* NULL: every call of def's dtypes is supported */
  void* supports_user_data;     /* passed to supports */
} OarKernelRegistration;

/* Accessors a kernel uses on its context. Attribute getters fail with OAR_ERR_NOT_FOUND when the
 * attribute is absent and OAR_ERR_TYPE when it has another type. */
typedef struct OarKernelApi {
  size_t struct_size;
  int32_t (*num_inputs)(const OarKernelContext* ctx);
  const OarTensorDesc* (*input)(const OarKernelContext* ctx, int32_t index); /* NULL: absent optional */
  int32_t (*num_outputs)(const OarKernelContext* ctx);
  /* The output the core allocated from the op's shape/dtype inference. */
  const OarTensorDesc* (*output)(OarKernelContext* ctx, int32_t index);
  /* For data-dependent shapes: (re)allocates output `index` with the given dims. */
  OarError* (*resize_output)(OarKernelContext* ctx, int32_t index, int32_t ndim, const int64_t* dims,
                             const OarTensorDesc** out);
  OarStream (*stream)(const OarKernelContext* ctx);
  int32_t (*device)(const OarKernelContext* ctx);
  OarError* (*attr_int)(const OarKernelContext* ctx, const char* name, int64_t* value);
  OarError* (*attr_float)(const OarKernelContext* ctx, const char* name, double* value);
  OarError* (*attr_ints)(const OarKernelContext* ctx, const char* name, const int64_t** values,
                         int64_t* count);
  OarError* (*attr_floats)(const OarKernelContext* ctx, const char* name, const double** values,
                           int64_t* count);
  OarError* (*attr_string)(const OarKernelContext* ctx, const char* name, const char** value);
  /* Scratch device memory valid until the kernel's work on its stream is done. */
  OarError* (*workspace)(OarKernelContext* ctx, uint64_t bytes, void** ptr);
} OarKernelApi;

/* ---- the core's services, passed to init ----------------------------------------------------- */
typedef struct OarRegistrar OarRegistrar; /* opaque: identifies the plugin being initialised */

enum { OAR_LOG_DEBUG = 0, OAR_LOG_INFO = 1, OAR_LOG_WARNING = 2, OAR_LOG_ERROR = 3 };

typedef struct OarCoreServices {
  size_t struct_size;
  uint32_t abi_major; /* the core's ABI version */
  uint32_t abi_minor;
  OarError* (*error_new)(int32_t code, int64_t native_code, const char* message);
  void (*error_free)(OarError* error);
  int32_t (*error_code)(const OarError* error);
  int64_t (*error_native_code)(const OarError* error);
  const char* (*error_message)(const OarError* error);
  void (*log)(int32_t level, const char* message);
  /* Only valid during oar_plugin_init. A kernel for an op the core does not know is a warning. */
  OarError* (*register_kernel)(OarRegistrar* registrar, const OarKernelDef* def);
  const OarKernelApi* kernel_api;
  /* Key-value store for collective bootstrap, shared by all ranks of a job. */
  OarError* (*store_set)(const char* key, const void* value, uint64_t size);
  OarError* (*store_get)(const char* key, void* buffer, uint64_t capacity, uint64_t* size,
                         int64_t timeout_ms);
  void (*trace_event)(const OarTraceEvent* event);
  /* ABI 1.2. Like register_kernel (only during oar_plugin_init), with the size-prefixed
   * OarKernelRegistration (a supports query). NULL in an older core: use register_kernel. */
  OarError* (*register_kernel_ex)(OarRegistrar* registrar, const OarKernelRegistration* registration);
} OarCoreServices;

/* ---- what a plugin exports -------------------------------------------------------------------- */
typedef struct OarPluginInfo {
  size_t struct_size;
  const char* name;            /* plugin name: file is liboar_plugin_<name>.so */
  const char* device_type;     /* device type it provides: "cpu", "sim", "gpu", ... */
  const char* plugin_version;
  uint32_t abi_major;          /* the ABI the plugin was built for */
  uint32_t abi_minor;
  const char* vendor_versions; /* e.g. "oneDNN 2.6.3"; may be NULL */
  int32_t score;               /* among plugins for one device type, the highest loadable wins */
} OarPluginInfo;

typedef struct OarPluginTables {
  size_t struct_size;
  const OarDeviceTable* device; /* required */
  const OarMemoryTable* memory; /* required */
  const OarStreamTable* stream;
  const OarEventTable* event;
  const OarCollectiveTable* collective;
  const OarProfilerTable* profiler;
  void (*shutdown)(void); /* called once before unload */
} OarPluginTables;

/* Side-effect free: fills *info (the caller sets info->struct_size). Returns 0 on success. */
typedef int32_t (*OarPluginQueryFn)(OarPluginInfo* info);
/* Sets up the plugin, registers its kernels and fills *tables (caller sets tables->struct_size).
 * `services` stays valid until shutdown. */
typedef OarError* (*OarPluginInitFn)(const OarCoreServices* services, OarRegistrar* registrar,
                                     OarPluginTables* tables);

#define OAR_PLUGIN_QUERY_SYMBOL "oar_plugin_query"
#define OAR_PLUGIN_INIT_SYMBOL "oar_plugin_init"

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* OAR_DEVICE_API_H_ */
