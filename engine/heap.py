"""Give the heap an engine freed back to the operating system.

glibc keeps freed memory in its heaps for the next allocation, and raises its mmap threshold after the
first large tensor is freed, so a process that loads and shuts down engines one after another (a test suite,
a study's cells) grew by half a gigabyte or more per engine although nothing still referred to them.
`malloc_trim` hands the free pages back; elsewhere than glibc this does nothing.
"""

import ctypes
import ctypes.util
import gc


def give_back_heap() -> None:
    gc.collect()  # tensors held only by reference cycles go now, not at some later collection
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name)
        libc.malloc_trim(0)
    except (OSError, AttributeError, TypeError):  # no C library found, or one without malloc_trim (musl, macOS)
        pass
