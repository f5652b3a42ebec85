/* A LIFO allocator over one buffer the application owns: the workspace of generated
 * code. No malloc; frees out of order are refused with an error code, never corrupt
 * the stack. */
#ifndef MICROTIR_TVM_RUNTIME_CRT_STACK_ALLOCATOR_H_
#define MICROTIR_TVM_RUNTIME_CRT_STACK_ALLOCATOR_H_

#include <stddef.h>
#include <stdint.h>
#include <tvm/runtime/crt/error_codes.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Every block starts at this alignment (enough for any scalar and for SIMD loads). */
#define TVM_CRT_WORKSPACE_ALIGN 16

typedef struct {
  uint8_t* base;   /* start of the usable, aligned region */
  uint8_t* top;    /* next free byte */
  uint8_t* limit;  /* one past the last usable byte */
  uint8_t* last;   /* the most recent live allocation, NULL if none */
  size_t peak;     /* high-water mark in bytes, for the memory report */
} tvm_workspace_t;

tvm_crt_error_t StackMemoryManager_Init(tvm_workspace_t* ws, uint8_t* buffer, size_t size);
/* Allocates `nbytes` (rounded up to the alignment); *out is NULL on failure. */
tvm_crt_error_t StackMemoryManager_Allocate(tvm_workspace_t* ws, size_t nbytes, void** out);
/* `ptr` must be the most recent live allocation. */
tvm_crt_error_t StackMemoryManager_Free(tvm_workspace_t* ws, void* ptr);

/* The workspace behind TVMBackendAllocWorkspace / TVMBackendFreeWorkspace. */
tvm_crt_error_t TVMCrtWorkspaceInit(uint8_t* buffer, size_t size);
/* Bytes in use now and at most so far. */
size_t TVMCrtWorkspaceUsed(void);
size_t TVMCrtWorkspacePeak(void);

#ifdef __cplusplus
}
#endif
#endif /* MICROTIR_TVM_RUNTIME_CRT_STACK_ALLOCATOR_H_ */
