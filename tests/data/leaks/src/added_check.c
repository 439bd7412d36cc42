#include <stdlib.h>
#include <valgrind/memcheck.h>
static void *kept;
__attribute__((noinline)) void *lose(size_t n) { return malloc(n); }
int main(void) {
  lose(100);                      /* definitely lost from the start */
  VALGRIND_DO_LEAK_CHECK;
  lose(50);                       /* lost after the first check: (+50) */
  kept = malloc(30);              /* still reachable */
  VALGRIND_DO_ADDED_LEAK_CHECK;
  kept = 0;                       /* the 30 bytes become lost */
  return 0;
}
