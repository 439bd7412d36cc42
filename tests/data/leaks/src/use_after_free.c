/* An error AddressSanitizer stops at before its leak check, for the refusal of a sanitizer
 * report that is not a leak report. Build: gcc -O0 -g -fsanitize=address use_after_free.c */
#include <stdlib.h>

int main(void) {
    int *cell = malloc(sizeof *cell);
    free(cell);
    return *cell;
}
