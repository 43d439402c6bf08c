/* LD_PRELOAD shim of the fault tests (issue 21): a slow disk and a file system that turns
 * read-only while the store is open, for the files whose base name starts with
 * $MEMVAULT_FAULT_PREFIX (the database, its -wal and -journal; nothing else in the process).
 *
 *   MEMVAULT_FAULT_PREFIX        base-name prefix of the files affected (unset: the shim is inert)
 *   MEMVAULT_FAULT_DELAY_US      sleep this many microseconds before every write and sync
 *   MEMVAULT_FAULT_EROFS_TRIGGER while this file exists, every write, truncate and sync fails
 *                                with EROFS, as on a file system remounted read-only after an
 *                                error; removing it ends the fault
 *
 * Build: gcc -shared -fPIC -O2 -o fault_shim.so fault_shim.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/* The next definition of ``fn`` (libc's), looked up once. */
#define REAL(fn) \
    static __typeof__(&fn) real = NULL; \
    if (!real) real = (__typeof__(&fn))dlsym(RTLD_NEXT, #fn)

/* 0: not ours, go on; -1: fail with errno set; the delay is applied before returning 0. */
static int fault(int fd) {
    const char *prefix = getenv("MEMVAULT_FAULT_PREFIX");
    if (prefix == NULL || *prefix == 0) return 0;
    char link[64], path[PATH_MAX];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n < 0) return 0;
    path[n] = 0;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (strncmp(base, prefix, strlen(prefix)) != 0) return 0;
    const char *delay = getenv("MEMVAULT_FAULT_DELAY_US");
    if (delay != NULL) {
        long us = atol(delay);
        if (us > 0) {
            struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
            nanosleep(&ts, NULL);
        }
    }
    const char *trigger = getenv("MEMVAULT_FAULT_EROFS_TRIGGER");
    if (trigger != NULL && access(trigger, F_OK) == 0) {
        errno = EROFS;
        return -1;
    }
    return 0;
}

ssize_t write(int fd, const void *buf, size_t count) {
    REAL(write);
    if (fault(fd) < 0) return -1;
    return real(fd, buf, count);
}

ssize_t pwrite(int fd, const void *buf, size_t count, off_t offset) {
    REAL(pwrite);
    if (fault(fd) < 0) return -1;
    return real(fd, buf, count, offset);
}

ssize_t pwrite64(int fd, const void *buf, size_t count, off_t offset) {
    REAL(pwrite64);
    if (fault(fd) < 0) return -1;
    return real(fd, buf, count, offset);
}

ssize_t writev(int fd, const struct iovec *iov, int iovcnt) {
    REAL(writev);
    if (fault(fd) < 0) return -1;
    return real(fd, iov, iovcnt);
}

int ftruncate(int fd, off_t length) {
    REAL(ftruncate);
    if (fault(fd) < 0) return -1;
    return real(fd, length);
}

int ftruncate64(int fd, off_t length) {
    REAL(ftruncate64);
    if (fault(fd) < 0) return -1;
    return real(fd, length);
}

int fsync(int fd) {
    REAL(fsync);
    if (fault(fd) < 0) return -1;
    return real(fd);
}

int fdatasync(int fd) {
    REAL(fdatasync);
    if (fault(fd) < 0) return -1;
    return real(fd);
}
