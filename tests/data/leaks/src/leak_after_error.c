/* A heap-use-after-free that AddressSanitizer reports and recovers from (built with
 * -fsanitize-recover=address, run with ASAN_OPTIONS=halt_on_error=0), then a leak its
 * LeakSanitizer reports at exit: one log with both reports, the leak report read. */
#include <stdlib.h>
#include <string.h>

static __attribute__((noinline)) int read_freed(void) {
    int *cell = malloc(sizeof *cell);
    *cell = 7;
    free(cell);
    return *cell;
}

static __attribute__((noinline)) void lose_block(void) {
    char *block = malloc(48);
    memset(block, 'x', 48);
}

int main(void) {
    int value = read_freed();
    lose_block();
    return value == 7 ? 0 : 1;
}
