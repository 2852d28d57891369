// For the harnesses whose reader takes paths (fuzz_gold, fuzz_rundir): one
// directory per fuzzing process, in /dev/shm when there is one (the run
// directory's atomic saves fsync, which costs nothing on tmpfs), removed
// with what it holds when the process exits.
#ifndef TS_FUZZ_DIR_H
#define TS_FUZZ_DIR_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char fuzz_dir_path[64];

static void fuzz_dir_empty(void) {
    DIR *d = opendir(fuzz_dir_path);
    struct dirent *e;
    char path[4096];
    while (d && (e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            snprintf(path, sizeof path, "%s/%s", fuzz_dir_path, e->d_name);
            unlink(path);
        }
    if (d) closedir(d);
}

static void fuzz_dir_remove(void) {
    fuzz_dir_empty();
    rmdir(fuzz_dir_path);
}

// The process's directory, emptied: made on the first call.
static const char *fuzz_dir(void) {
    if (!fuzz_dir_path[0]) {
        struct stat st;
        const char *base = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) && access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
        snprintf(fuzz_dir_path, sizeof fuzz_dir_path, "%s/tinyseq-fuzz-XXXXXX", base);
        if (!mkdtemp(fuzz_dir_path)) __builtin_trap();
        atexit(fuzz_dir_remove);
    }
    fuzz_dir_empty();
    return fuzz_dir_path;
}

// Writes bytes[0..n) to dir/name; the path into path (4096 bytes).
static void fuzz_write(const char *dir, const char *name, const void *bytes, size_t n, char *path) {
    snprintf(path, 4096, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || (n && fwrite(bytes, 1, n, f) != n) || fclose(f) != 0) __builtin_trap();
}

#endif
