/* heapdemo: a small C program whose heap the gperftools and jemalloc recording scripts
 * profile (../record_gperftools.sh, ../record_jemalloc.sh): four threads, each its own call
 * paths, some blocks kept to the end (in use), most freed (allocated only). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEPT 4096
static void *kept[KEPT];
static int nkept;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void keep(void *p) {
  pthread_mutex_lock(&lock);
  if (nkept < KEPT) kept[nkept++] = p;
  pthread_mutex_unlock(&lock);
}

__attribute__((noinline)) static char *make_buffer(size_t n) {
  char *p = malloc(n);
  memset(p, 1, n);
  return p;
}

__attribute__((noinline)) static char *copy_name(const char *name) {
  return strdup(name);
}

__attribute__((noinline)) static void parse_request(int i) {
  char *body = make_buffer(256 + (i % 8) * 128);
  char *name = copy_name("request-header-value");
  if (i % 10 == 0) keep(body); else free(body);
  free(name);
}

__attribute__((noinline)) static void open_session(int i) {
  char **tags = calloc(4, sizeof(char *));
  for (int t = 0; t < 4; t++) tags[t] = make_buffer(32 + t * 16);
  keep(tags);
  if (i % 3 == 0) keep(make_buffer(4096));
}

__attribute__((noinline)) static void build_report(int rows) {
  char *text = NULL;
  size_t size = 0;
  for (int r = 0; r < rows; r++) {
    text = realloc(text, size + 64);
    size += 64;
  }
  free(text);
}

__attribute__((noinline)) static void cache_blocks(int id, int n) {
  for (int k = 0; k < n; k++) keep(make_buffer((size_t)1 << (8 + (id + k) % 6)));
}

static void *worker(void *arg) {
  int id = (int)(long)arg;
  for (int r = 0; r < 200; r++) {
    switch (id % 4) {
      case 0: parse_request(r); break;
      case 1: open_session(r); break;
      case 2: build_report(10 + r % 30); break;
      case 3: if (r % 4 == 0) cache_blocks(id, 2); break;
    }
  }
  return NULL;
}

#ifdef HEAPDEMO_AS_LIBRARY /* heapsample.cc calls it, then dumps tcmalloc's own heap sample */
#define main heapdemo_main
#endif
int main(void) {
  pthread_t threads[4];
  for (long id = 0; id < 4; id++) pthread_create(&threads[id], NULL, worker, (void *)id);
  for (int id = 0; id < 4; id++) pthread_join(threads[id], NULL);
  printf("kept %d blocks\n", nkept);
  return 0;
}
