/* Linux system calls and glibc functions that Swift's Glibc module does not declare (glibc declares them only under
   _GNU_SOURCE). */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/syscall.h>

/* renameat2(from, to, RENAME_EXCHANGE): swaps the two names atomically; both must exist. Returns 0, or -1 with
   errno; EINVAL or ENOSYS where the file system or the kernel (before 3.15) cannot exchange. */
static inline int kcar_rename_exchange(const char *from, const char *to) {
#ifdef SYS_renameat2
    return (int)syscall(SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to, 2 /* RENAME_EXCHANGE */);
#else
    errno = ENOSYS;
    return -1;
#endif
}

/* memrchr(s, c, n): the last byte c among the n bytes at s, or NULL (a GNU extension of glibc's string.h). */
#include <stddef.h>
extern void *memrchr(const void *s, int c, size_t n);
static inline const void *kcar_memrchr(const void *s, int c, size_t n) { return memrchr(s, c, n); }
