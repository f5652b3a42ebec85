/* LIFO workspace allocator. Each block is [header][data]; the header remembers the
 * previous live block so frees can be checked against allocation order. */
#include <tvm/runtime/c_backend_api.h>
#include <tvm/runtime/crt/stack_allocator.h>

#include <string.h>

typedef struct {
  uint8_t* previous; /* data pointer of the block allocated before this one */
} block_header_t;

/* The header is padded to the alignment so the data behind it stays aligned. */
#define HEADER_SIZE \
  (((sizeof(block_header_t) + TVM_CRT_WORKSPACE_ALIGN - 1) / TVM_CRT_WORKSPACE_ALIGN) * TVM_CRT_WORKSPACE_ALIGN)

static size_t align_up(size_t n) {
  return (n + TVM_CRT_WORKSPACE_ALIGN - 1) & ~(size_t)(TVM_CRT_WORKSPACE_ALIGN - 1);
}

tvm_crt_error_t StackMemoryManager_Init(tvm_workspace_t* ws, uint8_t* buffer, size_t size) {
  uintptr_t start, end;
  if (ws == NULL || (buffer == NULL && size != 0)) return kTvmErrorNullArgument;
  start = (uintptr_t)buffer;
  end = start + size;
  start = (start + TVM_CRT_WORKSPACE_ALIGN - 1) & ~(uintptr_t)(TVM_CRT_WORKSPACE_ALIGN - 1);
  if (start > end) start = end;
  ws->base = (uint8_t*)start;
  ws->top = ws->base;
  ws->limit = (uint8_t*)end;
  ws->last = NULL;
  ws->peak = 0;
  return kTvmErrorNoError;
}

tvm_crt_error_t StackMemoryManager_Allocate(tvm_workspace_t* ws, size_t nbytes, void** out) {
  size_t available, needed;
  block_header_t* header;
  if (out == NULL) return kTvmErrorNullArgument;
  *out = NULL;
  if (ws == NULL || ws->base == NULL) return kTvmErrorWorkspaceNotInitialized;
  available = (size_t)(ws->limit - ws->top);
  /* Written so that a huge nbytes cannot wrap around. */
  if (available < HEADER_SIZE || nbytes > available || align_up(nbytes) > available - HEADER_SIZE) {
    return kTvmErrorPlatformNoMemory;
  }
  needed = HEADER_SIZE + align_up(nbytes);
  header = (block_header_t*)(void*)ws->top;
  header->previous = ws->last;
  ws->last = ws->top + HEADER_SIZE;
  ws->top += needed;
  if ((size_t)(ws->top - ws->base) > ws->peak) ws->peak = (size_t)(ws->top - ws->base);
  *out = ws->last;
  return kTvmErrorNoError;
}

tvm_crt_error_t StackMemoryManager_Free(tvm_workspace_t* ws, void* ptr) {
  uint8_t* p = (uint8_t*)ptr;
  if (ws == NULL || ws->base == NULL) return kTvmErrorWorkspaceNotInitialized;
  if (p == NULL || ws->last == NULL) return kTvmErrorWorkspaceFreeUnknown;
  if (p != ws->last) {
    /* A live block freed too early, or a pointer that was never ours. */
    return (p > ws->base && p < ws->top) ? kTvmErrorWorkspaceFreeOrder : kTvmErrorWorkspaceFreeUnknown;
  }
  ws->top = p - HEADER_SIZE;
  ws->last = ((block_header_t*)(void*)ws->top)->previous;
  return kTvmErrorNoError;
}

/* ---- the process-wide workspace behind TVMBackendAllocWorkspace ---------------- */

static tvm_workspace_t g_workspace;

#ifdef TVM_CRT_SEPARATE_ALLOCATIONS
/* Hosted builds under the sanitizers (run --target host with MICROTIR_HOST_SANITIZE):
 * every block is its own heap allocation of exactly the bytes asked for, so an overrun
 * past a kernel's workspace is an AddressSanitizer report instead of a write into the
 * next block. The LIFO discipline and the byte counts are kept as in the arena. */
#include <stdlib.h>
typedef struct separate_block {
  struct separate_block* previous;
  void* data;
  size_t bytes;
} separate_block_t;
static separate_block_t* g_separate_last;
static size_t g_separate_used;

static tvm_crt_error_t separate_allocate(size_t nbytes, void** out) {
  separate_block_t* block = (separate_block_t*)malloc(sizeof(separate_block_t));
  if (block == NULL) return kTvmErrorPlatformNoMemory;
  /* malloc(0) may return NULL; one byte keeps a zero-sized workspace a valid pointer. */
  block->data = malloc(nbytes > 0 ? nbytes : 1);
  if (block->data == NULL) {
    free(block);
    return kTvmErrorPlatformNoMemory;
  }
  block->bytes = nbytes;
  block->previous = g_separate_last;
  g_separate_last = block;
  g_separate_used += nbytes;
  if (g_separate_used > g_workspace.peak) g_workspace.peak = g_separate_used;
  *out = block->data;
  return kTvmErrorNoError;
}

static tvm_crt_error_t separate_free(void* ptr) {
  separate_block_t* block = g_separate_last;
  separate_block_t* live;
  if (ptr == NULL || block == NULL) return kTvmErrorWorkspaceFreeUnknown;
  if (block->data != ptr) {
    for (live = block->previous; live != NULL; live = live->previous)
      if (live->data == ptr) return kTvmErrorWorkspaceFreeOrder;
    return kTvmErrorWorkspaceFreeUnknown;
  }
  g_separate_last = block->previous;
  g_separate_used -= block->bytes;
  free(block->data);
  free(block);
  return kTvmErrorNoError;
}
#endif

tvm_crt_error_t TVMCrtWorkspaceInit(uint8_t* buffer, size_t size) {
  return StackMemoryManager_Init(&g_workspace, buffer, size);
}

size_t TVMCrtWorkspaceUsed(void) {
#ifdef TVM_CRT_SEPARATE_ALLOCATIONS
  return g_separate_used + (g_separate_last != NULL); /* a live zero-byte block counts */
#else
  return (size_t)(g_workspace.top - g_workspace.base);
#endif
}
size_t TVMCrtWorkspacePeak(void) { return g_workspace.peak; }

/* "...out of workspace memory (N bytes requested)", written by hand: snprintf would link
 * the printf family into every firmware (about 1.2 KB on a Cortex-M) for this one message. */
static void out_of_memory_message(char msg[96], unsigned long nbytes) {
  static const char head[] = "TVMBackendAllocWorkspace: out of workspace memory (";
  static const char tail[] = " bytes requested)";
  char digits[20];
  size_t n = 0, k = sizeof head - 1;
  do {
    digits[n++] = (char)('0' + (int)(nbytes % 10u));
    nbytes /= 10u;
  } while (nbytes != 0u);
  memcpy(msg, head, k);
  while (n > 0) msg[k++] = digits[--n];
  memcpy(msg + k, tail, sizeof tail); /* with its NUL: 51 + 20 + 18 <= 96 */
}

void* TVMBackendAllocWorkspace(int device_type, int device_id, uint64_t nbytes, int dtype_code_hint,
                               int dtype_bits_hint) {
  void* out = NULL;
  char msg[96];
  tvm_crt_error_t err;
  (void)device_type;
  (void)device_id;
  (void)dtype_code_hint;
  (void)dtype_bits_hint;
  if (nbytes > (uint64_t)SIZE_MAX) {
    err = kTvmErrorPlatformNoMemory;
  } else if (g_workspace.base == NULL) {
    err = kTvmErrorWorkspaceNotInitialized;
  } else {
#ifdef TVM_CRT_SEPARATE_ALLOCATIONS
    err = separate_allocate((size_t)nbytes, &out);
#else
    err = StackMemoryManager_Allocate(&g_workspace, (size_t)nbytes, &out);
#endif
  }
  if (err != kTvmErrorNoError) {
    if (err == kTvmErrorWorkspaceNotInitialized) {
      TVMAPISetLastError("TVMBackendAllocWorkspace: workspace not initialized (call TVMCrtWorkspaceInit)");
    } else {
      out_of_memory_message(msg, (unsigned long)nbytes);
      TVMAPISetLastError(msg);
    }
  }
  return out;
}

int TVMBackendFreeWorkspace(int device_type, int device_id, void* ptr) {
#ifdef TVM_CRT_SEPARATE_ALLOCATIONS
  tvm_crt_error_t err = g_workspace.base == NULL ? kTvmErrorWorkspaceNotInitialized : separate_free(ptr);
#else
  tvm_crt_error_t err = StackMemoryManager_Free(&g_workspace, ptr);
#endif
  (void)device_type;
  (void)device_id;
  if (err == kTvmErrorWorkspaceFreeOrder) {
    TVMAPISetLastError("TVMBackendFreeWorkspace: blocks must be freed in reverse order of allocation");
  } else if (err != kTvmErrorNoError) {
    TVMAPISetLastError("TVMBackendFreeWorkspace: pointer is not a live workspace allocation");
  }
  return (int)err;
}
