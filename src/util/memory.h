#pragma once
#include "snapkv/memory.h"

namespace snapkv {

// Hands the allocator's free pages back to the system (glibc: malloc_trim), so that RSS follows
// the memory in use after large blocks (a finished sequence's KV cache) are freed. No-op elsewhere.
void release_free_memory();

}  // namespace snapkv
