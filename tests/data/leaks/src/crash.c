/* A program that dies of SIGSEGV (a write through a null pointer) with blocks still allocated:
 *   2,000 16-byte blocks a global array points at (still reachable when it dies);
 *   unless run as `crash kept`, 1,200 50-byte blocks whose pointers are dropped first
 *   (definitely lost: 60,000 bytes in 1,200 blocks).
 * valgrind prints "Process terminating with default action of signal 11 (SIGSEGV)" (its XML
 * a <fatal_signal>) and then, unless run with --leak-check=no, runs its leak check.
 * Recorded by tests/corpus/record_valgrind.sh (gcc -O0 -g -fno-inline crash.c).
 */
#include <stdlib.h>
#include <string.h>

static void *kept[2000];

static __attribute__((noinline)) void keep_blocks(int count) {
    for (int i = 0; i < count; i++)
        kept[i] = malloc(16);
}

static __attribute__((noinline)) void lose_blocks(int count) {
    for (int i = 0; i < count; i++) {
        char *block = malloc(50);
        memset(block, 'x', 50);
    }
}

static __attribute__((noinline)) void write_through(int *where) {
    *where = 1;
}

int main(int argc, char **argv) {
    keep_blocks(2000);
    if (!(argc > 1 && strcmp(argv[1], "kept") == 0))
        lose_blocks(1200);
    write_through(NULL);
    return 0;
}
