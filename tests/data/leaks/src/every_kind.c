/* Leaks in every way valgrind's memcheck tells apart, in counts large enough that valgrind
 * prints them with thousands separators (`64,146 bytes in 1,001 blocks`):
 *   definitely lost: 1,000 64-byte nodes whose only pointers are dropped, and one 146-byte
 *                    buffer (64,146 bytes in 1,001 blocks);
 *   indirectly lost: the 1,000 40-byte payloads reached only from those nodes (40,000 bytes);
 *   possibly lost:   1,500 128-byte blocks reached only through pointers into their middle;
 *   still reachable: 3,000 32-byte blocks a global array still points at;
 *   and 2,500 16-byte blocks allocated and freed (total heap usage: 9,001 allocs, 2,500 frees).
 * Recorded by tests/corpus/record_valgrind.sh (gcc -O0 -g -fno-inline every_kind.c).
 */
#include <stdlib.h>
#include <string.h>

struct node {
    char *payload;
    char padding[56];
};

static void *reachable[3000];
static char *interior[1500];

static __attribute__((noinline)) void lose_nodes(int count) {
    for (int i = 0; i < count; i++) {
        struct node *node = malloc(sizeof *node);
        node->payload = malloc(40);
        memset(node->payload, 'b', 40);
    }
}

static __attribute__((noinline)) void lose_buffer(void) {
    char *buffer = malloc(146);
    memset(buffer, 'a', 146);
}

static __attribute__((noinline)) void point_inside(int count) {
    for (int i = 0; i < count; i++) {
        char *block = malloc(128);
        memset(block, 'c', 128);
        interior[i] = block + 8;
    }
}

static __attribute__((noinline)) void keep_blocks(int count) {
    for (int i = 0; i < count; i++)
        reachable[i] = malloc(32);
}

static __attribute__((noinline)) void churn(int count) {
    for (int i = 0; i < count; i++) {
        char *block = malloc(16);
        block[0] = (char)i;
        free(block);
    }
}

int main(void) {
    lose_nodes(1000);
    lose_buffer();
    point_inside(1500);
    keep_blocks(3000);
    churn(2500);
    return 0;
}
