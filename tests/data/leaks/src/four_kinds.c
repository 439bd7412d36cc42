/* One block of each kind valgrind's memcheck tells apart, for the leak importers' tests:
 *   definitely lost: a 100-byte block whose only pointer is dropped;
 *   indirectly lost: a 40-byte block reached only from a lost 16-byte node (the node itself is
 *                    definitely lost: 16 direct + 40 indirect bytes);
 *   possibly lost:   a 64-byte block reached only through a pointer into its middle;
 *   still reachable: a 32-byte block a global still points at.
 * With the argument `clean` it allocates nothing, for a run without leaks.
 * Build: gcc -O0 -g -fno-inline four_kinds.c -o four_kinds   (add -fsanitize=address or
 * -fsanitize=leak for the sanitizers); the commands of each output are in tests/data/PROVENANCE.md.
 */
#include <stdlib.h>
#include <string.h>

struct node {
    struct node *next;
    char *payload;
};

static void *keep;            /* still reachable */
static char *inside;          /* points into a block's middle: possibly lost */

static __attribute__((noinline)) void lose_buffer(void) {
    char *buffer = malloc(100);
    memset(buffer, 'a', 100);
    buffer = NULL;             /* the only pointer is gone: definitely lost */
}

static __attribute__((noinline)) void lose_node(void) {
    struct node *node = malloc(sizeof *node);
    node->next = NULL;
    node->payload = malloc(40); /* reached only from the lost node: indirectly lost */
    memset(node->payload, 'b', 40);
    node = NULL;
}

static __attribute__((noinline)) void point_inside(void) {
    char *block = malloc(64);
    memset(block, 'c', 64);
    inside = block + 8;       /* only an interior pointer remains: possibly lost */
}

static __attribute__((noinline)) void keep_block(void) {
    keep = malloc(32);
    memset(keep, 'd', 32);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "clean") == 0)
        return 0;
    lose_buffer();
    lose_node();
    point_inside();
    keep_block();
    return 0;
}
