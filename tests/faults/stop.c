/* Preloaded by tests/faults/test_faults.py (never part of the program) with
 * PC_FAULT_STOP set: stops the program once the dynamic loader is done
 * (constructors run after every library is mapped), so that strace can
 * attach there and count, and fail, only the program's own system calls.
 * strace counts calls per thread (when=N): without this the main thread's
 * first calls would be the loader's, and an injection there would test
 * ld.so, not precompress. Nothing else here: it is preloaded into
 * sanitizer builds too, whose allocator must stay theirs (malloc.c).
 */
#include <signal.h>
#include <stdlib.h>

__attribute__((constructor)) static void pc_fault_stop(void) {
  if (getenv("PC_FAULT_STOP") != NULL)
    raise(SIGSTOP);
}
