#include <stdlib.h>
#include <string.h>
#include <stdio.h>
const char *__lsan_default_suppressions(void) { return "leak:suppressed_leak\n"; }
__attribute__((noinline)) void *suppressed_leak(void) { return malloc(48); }
__attribute__((noinline)) void *make_buffer(size_t n) { return malloc(n); }
__attribute__((noinline)) void churn(int rounds) {
  for (int i = 0; i < rounds; i++) { char *p = malloc(64); p[0] = (char)i; free(p); }
}
__attribute__((noinline)) void keep(int n, void **out) {
  for (int i = 0; i < n; i++) out[i] = make_buffer(1000);
}
int main(void) {
  static void *kept[10];
  churn(100);
  keep(10, kept);
  for (int i = 0; i < 5; i++) free(kept[i]);
  void *big = make_buffer(100000);
  free(big);
  suppressed_leak();
  make_buffer(24);
  printf("done\n");
  return 0;
}
